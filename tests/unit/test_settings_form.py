"""The project settings page's form (app/ui/settings_form.py) and rows (app/ui/settings_rows.py): a
settings object into the inputs and back into a partial PATCH body holding only what changed; an
error's field onto the input it is shown beside; secrets only ever as names and hints."""

from __future__ import annotations

import dataclasses

import pytest

from app.core.errors import Forbidden, InvalidInput, NotFound
from app.ui import settings_form, settings_rows
from app.ui.admin_views import health_rows
from app.ui.settings_form import Form, Secrets, form_of, patch_of

VIEW = {
    "project": {"id": 3, "name": "Reports"}, "role": "owner", "can_edit": True,
    "agent": {"provider": "acp", "default_provider": "demo", "preset": "claude", "command": None, "base_url": None,
              "model": "sonnet", "tool_policy": None, "limits": {"history_budget_chars": 24000},
              "env": {"REGION": "eu"}, "secrets": {"OPENAI_API_KEY": {"set": True, "hint": "…4f2a"},
                                                   "SHORT_TOKEN": {"set": True, "hint": "…"}},
              "api_key": {"set": False, "hint": None},
              "presets": [{"name": "claude", "installed": True, "version": "2.1.0", "install": "x claude",
                           "packages": {"@anthropic-ai/claude-code": "2.1.0"}},
                          {"name": "codex", "installed": False, "version": None, "install": "x codex",
                           "packages": {"@zed-industries/codex-acp": "0.16.0"}}]},
    "network": {"mode": "proxy", "allow_hosts": ["pypi.org"], "refused": [
        {"host": "example.com", "port": 443, "count": 3, "last_seen": "2026-01-02T10:00:00Z"},
        {"host": "::1", "port": 8080, "count": 1, "last_seen": "2026-01-02T09:00:00Z"}]},
    "budget": {"daily_tokens": 50000, "daily_cost_usd": 0.5, "today": {"tokens": 1200, "cost_usd": 0.04},
               "month": {"tokens": 0, "cost_usd": 0}, "spent": False,
               "tasks": [{"task_id": 7, "name": "nightly", "today": {"tokens": 1200, "cost_usd": 0.04},
                          "month": {"tokens": 98000, "cost_usd": 3.1}}]},
}


def test_the_inputs_show_the_settings_object() -> None:
    form = form_of(VIEW)
    assert form == Form(provider="acp", preset="claude", model="sonnet", tool_policy="allow",
                        history_budget_chars="24000", daily_tokens="50000", daily_cost_usd="0.5",
                        env=(("REGION", "eu"),), allow_hosts=("pypi.org",))


def test_nothing_changed_sends_nothing() -> None:
    form = form_of(VIEW)
    assert patch_of(form, dataclasses.replace(form, model=" sonnet ")) == {}


CHANGES = [
    ({"model": "opus"}, {"agent": {"model": "opus"}}),
    ({"model": ""}, {"agent": {"model": None}}),
    ({"tool_policy": "ask"}, {"agent": {"tool_policy": "ask"}}),
    ({"provider": ""}, {"agent": {"provider": None}}),
    ({"history_budget_chars": "12,000"}, {"agent": {"limits": {"history_budget_chars": 12000}}}),
    ({"history_budget_chars": "lots"}, {"agent": {"limits": {"history_budget_chars": "lots"}}}),
    ({"history_budget_chars": ""}, {"agent": {"limits": {"history_budget_chars": None}}}),
    ({"env": (("REGION", "us"), ("MODE", "fast"))}, {"agent": {"env": {"REGION": "us", "MODE": "fast"}}}),
    ({"env": ()}, {"agent": {"env": {"REGION": None}}}),
    ({"allow_hosts": ("pypi.org", "example.com:443")}, {"network": {"allow_hosts": ["pypi.org", "example.com:443"]}}),
    ({"daily_tokens": "-5"}, {"budget": {"daily_tokens": -5}}),
    ({"daily_tokens": "abc"}, {"budget": {"daily_tokens": "abc"}}),
    ({"daily_tokens": ""}, {"budget": {"daily_tokens": None}}),
    ({"daily_cost_usd": "$2"}, {"budget": {"daily_cost_usd": 2.0}}),
]


@pytest.mark.parametrize(("changed", "body"), CHANGES, ids=[str(c) for c, _ in CHANGES])
def test_only_what_changed_is_sent(changed: dict, body: dict) -> None:
    form = form_of(VIEW)
    assert patch_of(form, dataclasses.replace(form, **changed)) == body


def test_secrets_are_sent_when_typed_or_removed_and_never_otherwise() -> None:
    form = form_of(VIEW)
    secrets = Secrets(typed={"OPENAI_API_KEY": "sk-new-value-123", "SHORT_TOKEN": "  "},
                      removed=frozenset({"OLD_SECRET"}), api_key="", api_key_removed=True)
    assert patch_of(form, form, secrets) == {"agent": {"secrets": {"OLD_SECRET": None,
                                                                   "OPENAI_API_KEY": "sk-new-value-123"},
                                                       "api_key": None}}
    assert patch_of(form, form, Secrets(api_key="sk-typed")) == {"agent": {"api_key": "sk-typed"}}


SLOTS = [
    ("agent.model", "model"), ("agent.tool_policy", "tool_policy"),
    ("agent.limits.history_budget_chars", "history_budget_chars"), ("agent.env.REGION", "env"),
    ("agent.secrets.OPENAI_API_KEY", "secrets"), ("agent.api_key", "secrets"),
    ("network.allow_hosts", "allow_hosts"), ("budget.daily_tokens", "daily_tokens"),
    ("budget.daily_cost_usd", "daily_cost_usd"), ("agent.preset", "preset"), ("body", ""), ("agent.frobnicate", ""),
]


@pytest.mark.parametrize(("field", "slot"), SLOTS, ids=[f for f, _ in SLOTS])
def test_an_error_is_shown_beside_its_input(field: str, slot: str) -> None:
    assert settings_form.slot_of(field) == slot


def test_an_errors_message_reads_as_a_sentence_beside_the_input() -> None:
    tokens = InvalidInput("budget.daily_tokens", "must be a whole number of tokens from 1 to 1,000,000,000,000 "
                                                 "(null: no limit)")
    assert settings_form.message_of(tokens) == ("Must be a whole number of tokens from 1 to 1,000,000,000,000 "
                                                "(leave it empty for no limit)")
    assert settings_form.message_of(InvalidInput("agent.env.FOO_KEY", "names a secret")) == "FOO_KEY: names a secret"
    assert settings_form.message_of(InvalidInput("agent.model", "too long")) == "Too long."


def test_a_refusal_that_names_a_field_is_shown_beside_it() -> None:
    private = Forbidden("network.allow_hosts: 10.0.0.7 is a loopback, private or link-local address: only a "
                        "server admin can allow it")
    assert settings_form.placed(private) == ("allow_hosts", "10.0.0.7 is a loopback, private or link-local "
                                                            "address: only a server admin can allow it.")
    assert settings_form.placed(InvalidInput("agent.model", "too long")) == ("model", "Too long.")
    gone = NotFound("no project with id 5")
    assert settings_form.placed(gone) == ("", "no project with id 5")
    assert settings_form.placed(Forbidden("agent.frob: x")) == ("", "agent.frob: x")


def test_a_new_variable_goes_in_the_right_list_under_a_free_name() -> None:
    problem = settings_form.new_name_problem
    assert problem("REGION", False, set()) == ""
    assert problem("OPENAI_API_KEY", True, set()) == ""
    assert "add it under Secrets" in problem("OPENAI_API_KEY", False, set())
    assert "add it under Environment" in problem("REGION", True, set())
    assert "letters, digits" in problem("1BAD", False, set())
    assert "there already" in problem("REGION", False, {"REGION"})
    assert settings_form.host_problem("a b", ()) and settings_form.host_problem("x.org", ("x.org",))
    assert settings_form.host_problem("x.org:443", ("x.org",)) == ""


def test_a_saves_notice_names_what_changed() -> None:
    body = {"agent": {"model": "x", "tool_policy": "ask", "limits": {}, "secrets": {"A_KEY": "v"}},
            "network": {"allow_hosts": []}, "budget": {"daily_tokens": 5}}
    assert settings_form.changed_words(body) == ("model, tool policy, history budget, secret A_KEY, allow hosts, "
                                                 "daily tokens")


def test_the_rows_hold_names_and_hints_never_a_secrets_value() -> None:
    secrets = settings_rows.secret_rows(VIEW["agent"])
    assert [(s.name, s.hint) for s in secrets] == [("OPENAI_API_KEY", "set · ends in …4f2a"), ("SHORT_TOKEN", "set")]
    presets = settings_rows.preset_rows(VIEW["agent"]["presets"])
    assert [(c.value, c.label) for c in settings_rows.preset_choices(presets, "gemini")] == [
        ("", "None: an ACP command line"), ("claude", "Claude Code 2.1.0"), ("gemini", "gemini (not installed)")]
    assert [r.entry for r in settings_rows.refusal_rows(VIEW["network"]["refused"])] == ["example.com:443",
                                                                                       "[::1]:8080"]
    [task] = settings_rows.spend_rows(VIEW["budget"]["tasks"])
    assert (task.today, task.month) == ("1,200 tokens · $0.04", "98,000 tokens · $3.10")
    assert settings_rows.spend_words({"tokens": 0, "cost_usd": 0}) == "nothing"


def test_the_audit_record_says_who_did_what() -> None:
    rows = settings_rows.audit_rows([
        {"id": 2, "at": "2026-01-02T10:00:00Z", "actor": "a@example.com", "action": "member.add",
         "detail": {"email": "b@example.com", "role": "owner"}},
        {"id": 1, "at": "2026-01-01T10:00:00Z", "actor": "admin CLI", "action": "settings",
         "detail": {"keys": ["agent.model", "budget.daily_tokens"]}}])
    assert [(r.action, r.what) for r in rows] == [("added a member", "b@example.com as owner"),
                                                  ("changed settings", "agent.model, budget.daily_tokens")]


def test_the_health_report_in_words() -> None:
    rows = health_rows({"status": "ok", "db": "ok", "scheduler": {"alive": False, "last_beat": None},
                        "agent_sandbox": "off", "agent_network": "proxy",
                        "agents": {"ok": False, "count": 1, "problems": [{"detail": "no bwrap\nhere"}]}})
    assert [(r.key, r.ok) for r in rows] == [("sandbox", False), ("agent_network", True), ("scheduler", False),
                                             ("database", True), ("agents", False)]
    assert rows[2].value == "not running: no heartbeat yet" and rows[4].value == "no bwrap | here"


def test_remove_wins_over_a_value_typed_before_it() -> None:
    form = Form()
    typed_then_removed = Secrets(typed={"GH_TOKEN": "new-value-typed"}, removed=frozenset({"GH_TOKEN"}),
                                 api_key="sk-typed-then-removed", api_key_removed=True)
    assert patch_of(form, form, typed_then_removed) == {"agent": {"secrets": {"GH_TOKEN": None}, "api_key": None}}
