"""The egress policy (SPEC §12.1): which names and addresses a sandboxed agent may reach."""

from __future__ import annotations

import ipaddress

import pytest

from app.agents.egress.policy import ANY_PORT, BadHost, Policy, Rule, forbidden, parse_allow_hosts, parse_rule, url_rule

ip = ipaddress.ip_address


@pytest.mark.parametrize(("entry", "rule"), [
    ("api.example.com", Rule("api.example.com", ANY_PORT)),
    ("API.Example.COM.", Rule("api.example.com", ANY_PORT)),
    ("api.example.com:8443", Rule("api.example.com", 8443)),
    ("*.example.com", Rule("*.example.com", ANY_PORT)),
    ("*.example.com:443", Rule("*.example.com", 443)),
    ("10.0.0.5:11434", Rule("10.0.0.5", 11434)),
    ("[::1]:8080", Rule("::1", 8080)),
    ("[fd00::1]", Rule("fd00::1", ANY_PORT)),
])
def test_entries_parse(entry: str, rule: Rule) -> None:
    assert parse_rule(entry) == rule


@pytest.mark.parametrize("entry", ["", "*", "*.", "a*.example.com", "example.*.com", "host:0", "host:65536",
                                   "host:http", "http://host", "host/path", "[::1", "[::1]x", "ho st"])
def test_bad_entries_are_refused_with_the_entry_named(entry: str) -> None:
    with pytest.raises(BadHost):
        parse_rule(entry)


def test_the_setting_takes_commas_or_spaces() -> None:
    assert parse_allow_hosts("a.example, b.example:81  *.c.example") == (
        Rule("a.example"), Rule("b.example", 81), Rule("*.c.example"))
    assert parse_allow_hosts("") == ()


def test_a_base_url_allows_its_exact_host_and_port() -> None:
    assert url_rule("https://api.example.com/v1") == Rule("api.example.com", 443)
    assert url_rule("http://127.0.0.1:8123/v1") == Rule("127.0.0.1", 8123)
    assert url_rule("ftp://example.com") is None and url_rule("not a url") is None


def test_names_match_exactly_or_by_suffix_and_port() -> None:
    policy = Policy.build(["api.anthropic.com"], ["https://models.example:8443/v1"],
                          parse_allow_hosts("*.corp.example:443"))
    assert policy.allows_name("api.anthropic.com", 443) and policy.allows_name("API.anthropic.com.", 8080)
    assert policy.allows_name("models.example", 8443) and not policy.allows_name("models.example", 443)
    assert policy.allows_name("git.corp.example", 443) and policy.allows_name("a.b.corp.example", 443)
    assert not policy.allows_name("corp.example", 443)  # *.suffix is the subdomains only
    assert not policy.allows_name("evilcorp.example", 443) and not policy.allows_name("git.corp.example", 22)
    assert not policy.allows_name("anthropic.com", 443)


@pytest.mark.parametrize("address", ["127.0.0.1", "127.8.9.10", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1",
                                     "169.254.169.254", "169.254.1.1", "fe80::1", "fc00::1", "fd00:ec2::254",
                                     "100.64.0.1", "100.100.100.200", "0.0.0.0", "::", "224.0.0.1",
                                     "::ffff:127.0.0.1", "240.0.0.1"])
def test_addresses_an_agent_never_reaches_by_name(address: str) -> None:
    assert forbidden(ip(address))


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "1.1.1.1"])
def test_public_addresses_are_fine(address: str) -> None:
    assert not forbidden(ip(address))


def test_a_name_resolving_to_loopback_is_refused_unless_the_literal_is_allowed() -> None:
    policy = Policy.build([], [], parse_allow_hosts("localhost:5432, models.internal, 10.0.0.7:11434"))
    assert policy.allows_name("localhost", 5432)
    assert policy.pick("localhost", 5432, [ip("127.0.0.1"), ip("::1")]) is None  # rebinding: refused
    assert policy.pick("models.internal", 443, [ip("10.0.0.7")]) is None  # the literal allows port 11434 only
    assert policy.pick("models.internal", 11434, [ip("10.0.0.7")]) == ip("10.0.0.7")
    assert policy.pick("models.internal", 443, [ip("10.0.0.9"), ip("93.184.216.34")]) == ip("93.184.216.34")


def test_a_loopback_base_url_needs_allow_hosts_for_its_address() -> None:
    policy = Policy.build([], ["http://127.0.0.1:8123/v1"], ())
    assert policy.allows_name("127.0.0.1", 8123) and policy.pick("127.0.0.1", 8123, [ip("127.0.0.1")]) is None
    allowed = Policy.build([], ["http://127.0.0.1:8123/v1"], parse_allow_hosts("127.0.0.1:8123"))
    assert allowed.pick("127.0.0.1", 8123, [ip("127.0.0.1")]) == ip("127.0.0.1")
    assert not allowed.allows_name("127.0.0.1", 5432)


def test_a_model_host_never_opens_a_private_address() -> None:
    policy = Policy.build(["api.anthropic.com:443"], [], ())
    assert policy.pick("api.anthropic.com", 443, [ip("10.0.0.1")]) is None


def test_allowed_loopback_ports_are_the_ones_mirrored_inside() -> None:
    policy = Policy.build(["api.anthropic.com:443"], ["http://127.0.0.1:11434", "https://api.example.com"],
                          parse_allow_hosts("127.0.0.1:8123, 127.0.0.1, 10.0.0.1:80"))
    assert policy.loopback_ports() == (8123,)  # a base URL alone opens no loopback port
