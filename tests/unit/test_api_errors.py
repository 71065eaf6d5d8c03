"""The one mapping from errors to HTTP answers (app/api/errors.py), without a server."""

from __future__ import annotations

import json

import pytest
from fastapi.exceptions import RequestValidationError

from app.api.errors import error_response, status_of, validation_message
from app.core import errors as core


def _invalid(loc: tuple[object, ...], kind: str, msg: str = "bad") -> RequestValidationError:
    return RequestValidationError([{"loc": loc, "type": kind, "msg": msg, "input": None}])


VALIDATION = [
    ("path-param", ("path", "cid"), "int_parsing", 404, "cid: no such resource"),
    ("invalid-json", ("body", 12), "json_invalid", 400, "body: is not valid JSON"),
    ("unknown-field", ("body", "colour"), "extra_forbidden", 400, "colour: unknown field"),
    ("missing-field", ("body", "name"), "missing", 400, "name: is required"),
    ("missing-body", ("body",), "missing", 400, "body: is required"),
    ("body-not-object", ("body",), "model_attributes_type", 400,
     "body: must be a JSON object (sent as Content-Type: application/json)"),
    ("body-not-dict", ("body",), "dict_type", 400,
     "body: must be a JSON object (sent as Content-Type: application/json)"),
    ("wrong-type", ("body", "name"), "string_type", 400, "name: Input should be a valid string"),
    ("nested-item", ("body", "skills", 0), "string_type", 400, "skills.0: Input should be a valid string"),
    ("query-param", ("query", "limit"), "less_than_equal", 400, "limit: Input should be a valid string"),
    ("empty-location", (), "value_error", 400, "body: Input should be a valid string"),
]


@pytest.mark.parametrize(("loc", "kind", "status", "message"), [c[1:] for c in VALIDATION],
                         ids=[c[0] for c in VALIDATION])
def test_validation_message(loc: tuple[object, ...], kind: str, status: int, message: str) -> None:
    assert validation_message(_invalid(loc, kind, "Input should be a valid string")) == (status, message)


def test_only_the_first_error_is_reported() -> None:
    exc = RequestValidationError([
        {"loc": ("body", "title"), "type": "missing", "msg": "Field required"},
        {"loc": ("body", "extra"), "type": "extra_forbidden", "msg": "Extra inputs are not permitted"},
    ])
    assert validation_message(exc) == (400, "title: is required")


STATUSES = [
    (core.InvalidInput("name", "must not be empty"), 400),
    (core.Unauthorized(), 401),
    (core.InvalidCredentials(), 401),
    (core.Forbidden(), 403),
    (core.NotFound(), 404),
    (core.Conflict(), 409),
    (core.AlreadyExists(), 409),
    (core.PromptAlreadyRunning(), 409),
]


@pytest.mark.parametrize(("exc", "status"), STATUSES, ids=[type(e).__name__ for e, _ in STATUSES])
def test_domain_error_status(exc: core.ChatcronError, status: int) -> None:
    assert status_of(exc) == status


def test_error_codes_are_distinct_per_class() -> None:
    codes = [type(e).code for e, _ in STATUSES]
    assert len(set(codes)) == len(codes)


def test_invalid_input_message_starts_with_the_field() -> None:
    assert core.InvalidInput("skills", "unknown skill 'x'").message == "skills: unknown skill 'x'"


def test_default_message_is_the_docstring() -> None:
    assert core.PromptAlreadyRunning().message == (
        "The agent is still working on this chat; wait for the current turn to finish.")


def test_error_body_shape() -> None:
    response = error_response(409, "conflict", "busy", {"Retry-After": "1"})
    assert response.status_code == 409
    assert json.loads(response.body) == {"error": {"code": "conflict", "message": "busy"}}
    assert response.headers["retry-after"] == "1"
