"""The Agent section of the project settings page (`settings-agent`): provider, preset, model, tool
policy, history budget, environment, secrets (write-only) and "Test the agent"."""

from __future__ import annotations

import reflex as rx

from app.ui.components.settings_fields import error_of, field, options, owner_button, section, select, text_input, tid
from app.ui.settings_form import POLICIES, PROVIDERS
from app.ui.settings_rows import Choice, EnvRow, PresetRow, SecretRow
from app.ui.state.agent_test import AgentTestState as T
from app.ui.state.project_settings import SettingsState as S

ABOUT = "Which agent answers in this project's chats — typed turns and scheduled fires alike — and how."


def _provider() -> rx.Component:
    default = rx.el.option("Server default (" + S.default_provider + ")", value="")
    choices = [default, *options({k: v for k, v in PROVIDERS.items() if k})]
    return field("Provider", select("provider", "settings-provider", choices, "Provider"), "provider")


def _preset_option(choice: Choice) -> rx.Component:
    return rx.el.option(choice.label, value=choice.value)


def _preset() -> rx.Component:
    control = rx.el.select(rx.foreach(S.preset_options, _preset_option), value=S.preset,
                           on_change=lambda value: S.set_field("preset", value), disabled=~S.can_edit,
                           aria_label="Preset", class_name="cc-native-select cc-wide-select",
                           custom_attrs=tid("settings-preset"))
    return field("Preset (ACP agents)", control, "preset", "Only the presets installed on this server are offered.")


def _missing_preset(preset: PresetRow) -> rx.Component:
    return rx.cond(
        ~preset.installed,
        rx.box(rx.text(preset.label, " (", preset.packages, ") — an admin installs it with", size="1"),
               rx.code(preset.install, size="1", class_name="cc-wrap-code"),
               class_name="cc-missing-preset",
               custom_attrs=tid("settings-preset-missing", **{"data-name": preset.name})),
    )


def _plain_fields() -> rx.Component:
    return rx.box(
        _provider(),
        _preset(),
        field("Model", text_input("model", "settings-model", "the agent's own default"), "model"),
        field("Tool policy", select("tool_policy", "settings-tool-policy", options(POLICIES), "Tool policy"),
              "tool_policy", "What the agent may do with tools (ACP agents)."),
        field("History budget (characters)",
              text_input("history_budget_chars", "settings-history-budget", "24,000", input_mode="numeric"),
              "history_budget_chars", "How much of the chat's history a fresh session is given."),
        field("Command line", text_input("command", "settings-command", "my-agent --acp"), "command",
              "The command provider, or an ACP agent without a preset."),
        field("Base URL", text_input("base_url", "settings-base-url", "https://api.example.com/v1"), "base_url",
              "OpenAI-compatible APIs."),
        class_name="cc-settings-grid",
    )


def _env_row(row: EnvRow) -> rx.Component:
    return rx.box(
        rx.code(row.name, class_name="cc-kv-name"),
        rx.input(value=row.value, on_change=lambda value: S.set_env(row.name, value), disabled=~S.can_edit,
                 aria_label=row.name, flex="1 1 12em", min_width="0", custom_attrs=tid("settings-env-value")),
        owner_button(rx.icon("x", size=14), "Remove", color_scheme="gray", on_click=S.remove_env(row.name),
                     custom_attrs=tid("settings-env-remove")),
        class_name="cc-kv-row", custom_attrs=tid("settings-env-row", **{"data-name": row.name}),
    )


def _env() -> rx.Component:
    add = rx.cond(S.can_edit, rx.box(
        rx.input(value=S.new_env_name, on_change=lambda v: S.set_field("new_env_name", v), placeholder="NAME",
                 aria_label="New variable's name", flex="1 1 8em", min_width="0",
                 custom_attrs=tid("settings-env-new-name")),
        rx.input(value=S.new_env_value, on_change=lambda v: S.set_field("new_env_value", v), placeholder="value",
                 aria_label="New variable's value", flex="2 1 10em", min_width="0",
                 custom_attrs=tid("settings-env-new-value")),
        rx.button(rx.icon("plus", size=14), "Add", type="button", size="2", variant="soft", on_click=S.add_env,
                  custom_attrs=tid("settings-env-add")),
        class_name="cc-kv-row",
    ))
    return rx.vstack(
        rx.text("Environment", size="2", weight="medium"),
        rx.text("Variables the agent's process gets (names holding KEY, TOKEN, SECRET or PASSWORD are secrets, below).",
                size="1", color_scheme="gray"),
        rx.cond(S.env.length() > 0, rx.vstack(rx.foreach(S.env, _env_row), spacing="2", width="100%"),
                rx.text("None.", size="1", color_scheme="gray")),
        add, error_of("env"),
        spacing="2", width="100%",
    )


def _secret_input(on_change, label: rx.Var | str, testid: str, marker: str) -> rx.Component:
    """Write-only: uncontrolled (the page never sends a value back into it), cleared after Save; an
    owner's only (a member has nothing to type)."""
    return rx.cond(S.can_edit, rx.input(type="password", on_change=on_change, placeholder="new value",
                                        aria_label=label, auto_complete="new-password", flex="1 1 10em",
                                        min_width="0", custom_attrs={**tid(testid), marker: "true"}))


def _secret_row(row: SecretRow) -> rx.Component:
    return rx.box(
        rx.code(row.name, class_name="cc-kv-name"),
        rx.badge(rx.cond(row.removed, "removed on Save", rx.cond(row.typed, "replaced on Save", row.hint)),
                 color_scheme=rx.cond(row.removed, "red", rx.cond(row.typed, "amber", "gray")), variant="soft",
                 custom_attrs=tid("settings-secret-hint")),
        rx.cond(row.removed, rx.fragment(),
                _secret_input(lambda value: S.type_secret(row.name, value), row.name, "settings-secret-input",
                              "data-secret-input")),
        owner_button(rx.cond(row.removed, "Keep", "Remove"), color_scheme="gray", on_click=S.toggle_secret(row.name),
                     custom_attrs=tid("settings-secret-remove")),
        class_name="cc-kv-row", custom_attrs=tid("settings-secret-row", **{"data-name": row.name}),
    )


def _api_key() -> rx.Component:
    state = rx.cond(S.api_key_removed, "removed on Save", rx.cond(S.api_key_typed, "replaced on Save",
                                                                  rx.cond(S.api_key_hint != "", S.api_key_hint,
                                                                          "not set")))
    return rx.box(
        rx.text("API key", rx.text(" (OpenAI-compatible)", as_="span", color_scheme="gray"), size="2",
                class_name="cc-kv-name"),
        rx.badge(state, variant="soft", color_scheme="gray", custom_attrs=tid("settings-api-key-state")),
        rx.cond(S.api_key_removed, rx.fragment(),
                _secret_input(S.type_api_key, "API key", "settings-api-key", "data-secret-input")),
        rx.cond(S.api_key_hint != "", owner_button(rx.cond(S.api_key_removed, "Keep", "Remove"), color_scheme="gray",
                                                   on_click=S.toggle_api_key)),
        class_name="cc-kv-row", custom_attrs=tid("settings-api-key-row"),
    )


def _secrets() -> rx.Component:
    add = rx.cond(S.can_edit, rx.box(
        rx.input(value=S.new_secret_name, on_change=lambda v: S.set_field("new_secret_name", v),
                 placeholder="NAME_TOKEN", aria_label="New secret's name", flex="1 1 9em", min_width="0",
                 custom_attrs=tid("settings-secret-new-name")),
        _secret_input(S.type_new_secret, "New secret's value", "settings-secret-new-value", "data-new-secret"),
        rx.button(rx.icon("plus", size=14), "Add", type="button", size="2", variant="soft", on_click=S.add_secret,
                  custom_attrs=tid("settings-secret-add")),
        class_name="cc-kv-row",
    ))
    return rx.vstack(
        rx.text("Secrets", size="2", weight="medium"),
        rx.text("Write-only: a secret is never shown again, only whether it is set and how it ends. Type a new "
                "value to replace one.", size="1", color_scheme="gray"),
        rx.vstack(rx.foreach(S.secrets, _secret_row), _api_key(), spacing="2", width="100%"),
        add, error_of("secrets"),
        spacing="2", width="100%", custom_attrs=tid("settings-secrets"),
    )


def _test() -> rx.Component:
    result = rx.cond(
        T.error != "",
        rx.callout(T.error, icon="triangle-alert", color_scheme="red", width="100%",
                   custom_attrs=tid("settings-agent-test-error")),
        rx.cond(T.reply != "", rx.callout(T.reply, icon="bot", color_scheme="green", width="100%",
                                          custom_attrs=tid("settings-agent-test-reply"))),
    )
    return rx.cond(S.can_edit, rx.vstack(
        rx.divider(),
        rx.hstack(
            rx.button(rx.cond(T.running, rx.spinner(size="1"), rx.icon("play", size=14)), "Test the agent",
                      type="button", variant="soft", on_click=T.run, disabled=T.running,
                      custom_attrs=tid("settings-agent-test")),
            rx.text("Sends one short line through the saved settings (in the “Agent test” chat).", size="1",
                    color_scheme="gray"),
            align="center", wrap="wrap", spacing="2",
        ),
        result, spacing="2", width="100%",
    ))


def agent_section() -> rx.Component:
    return section(
        "settings-agent", "bot", "Agent", ABOUT,
        _plain_fields(),
        rx.foreach(S.presets, _missing_preset),
        rx.divider(), _env(), rx.divider(), _secrets(), _test(),
    )
