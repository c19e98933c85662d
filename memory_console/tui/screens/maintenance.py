"""The maintenance screen: passes, decay policy, parameters and the date to evaluate at."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import (
    Button,
    Header,
    Input,
    Label,
    RadioButton,
    RadioSet,
    Select,
    SelectionList,
    Static,
)

from memory_console.literal import literal
from memory_console.maintenance import registered_passes
from memory_console.maintenance.registry import DECAY as DECAY_PASSES
from memory_console.policies import POLICIES
from memory_console.store import StoreSettings
from memory_console.tui.plan_request import (
    PRESETS,
    PlanRequest,
    describe_time,
    evaluation_time,
    param_fields,
)
from memory_console.tui.screens.base import ConsoleScreen
from memory_console.tui.widgets.footer import FittedFooter
from memory_console.tui.widgets.literal_input import LiteralInput
from memory_console.tui.widgets.param_form import ParamForm
from memory_console.tui.widgets.pass_list import PassList

OTHER_DATE = "date"
PASS_NAMES = {"sensitive": "sensitive scan"}


class MaintenanceScreen(ConsoleScreen):
    """Choose what to preview; the preview itself (and apply) is the next screen."""

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    BINDINGS = [
        Binding(
            "ctrl+r",
            "preview",
            "Preview",
            id="maintenance.preview",
            tooltip="Plan the chosen passes (nothing is written) and show what would change",
        ),
        Binding(
            "ctrl+d",
            "defaults",
            "Defaults",
            id="maintenance.defaults",
            tooltip="Put every parameter back to its default",
        ),
        Binding("escape", "back", "Back", id="maintenance.back", tooltip="Back to where you were"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.chosen_passes: tuple[str, ...] = DECAY_PASSES
        self.store_settings: StoreSettings | None = None  # read when mounted

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="maintenance-body"):
            with VerticalScroll(id="maintenance-choices"):
                yield Label("passes (space: choose)", classes="section first")
                yield PassList(*self.pass_choices(), id="maintenance-passes")
                yield Static(id="maintenance-pass-summary")
                yield Label("decay policy", classes="section")
                with RadioSet(id="maintenance-policy"):
                    for name in POLICIES:
                        yield RadioButton(name, value=name == self.default_policy, name=name)
                yield Label("evaluate at", classes="section")
                with Horizontal(id="maintenance-when"):
                    yield Select(
                        [(label, value) for value, label in PRESETS]
                        + [("another date…", OTHER_DATE)],
                        value="now",
                        allow_blank=False,
                        id="maintenance-preset",
                        compact=True,
                        tooltip="When to evaluate: a later date shows what happens "
                        "if nothing is accessed until then",
                    )
                    yield LiteralInput(
                        placeholder="2027-03-01 or +45",
                        id="maintenance-date",
                        compact=True,
                        tooltip="An ISO date, or +N days (+3m, +1y)",
                    )
                yield Static(id="maintenance-when-text")
                with Horizontal(classes="buttons"):
                    yield Button(
                        "Preview",
                        variant="primary",
                        id="maintenance-preview",
                        tooltip="Plan (nothing is written) and show what would change",
                    )
                yield Static(id="maintenance-error")
            with VerticalScroll(id="maintenance-params"):
                yield Label("parameters (empty: the default)", classes="section first")
                yield ParamForm(id="maintenance-form")
        yield FittedFooter()

    def pass_choices(self) -> list[tuple[str, str, bool]]:
        return [
            (PASS_NAMES.get(name, name), name, name in self.chosen_passes)
            for name in registered_passes()
        ]

    def on_mount(self) -> None:
        self.sub_title = "maintenance"
        self.query_one("#maintenance-date", Input).display = False
        self.query_one("#maintenance-passes", SelectionList).focus()
        self.show_params()
        self.show_when()

    # -- the form -------------------------------------------------------------------------

    @property
    def default_policy(self) -> str:
        """The store's decay policy: what every process uses unless a run says otherwise."""
        if self.store_settings is None:
            self.store_settings = self.context.store.settings()
        return self.store_settings.decay_policy

    @property
    def policy(self) -> str:
        pressed = self.query_one("#maintenance-policy", RadioSet).pressed_button
        return pressed.name if pressed is not None and pressed.name else self.default_policy

    def show_params(self) -> None:
        self.query_one(ParamForm).show(
            param_fields(self.chosen_passes or DECAY_PASSES, self.policy, self.store_settings)
        )

    def when_text(self) -> str:
        preset = self.query_one("#maintenance-preset", Select).value
        if preset == OTHER_DATE:
            return self.query_one("#maintenance-date", Input).value
        return str(preset)

    def show_when(self) -> None:
        now = self.context.now()
        line = Text()
        try:
            moment = evaluation_time(self.when_text(), now)
        except ValueError as error:
            line.append(literal(str(error), "bold red"))
        else:
            line.append(f"→ {describe_time(moment, now)}", style="bold")
            if moment - now > 60:
                line.append("\n  as if nothing were accessed until then", style="dim")
        self.query_one("#maintenance-when-text", Static).update(line)

    @on(SelectionList.SelectedChanged, "#maintenance-passes")
    def _passes_changed(self, event: SelectionList.SelectedChanged[str]) -> None:
        chosen = set(event.selection_list.selected)
        self.chosen_passes = tuple(name for name in registered_passes() if name in chosen)
        self.show_params()

    @on(SelectionList.SelectionHighlighted, "#maintenance-passes")
    def _pass_highlighted(self, event: SelectionList.SelectionHighlighted[str]) -> None:
        name = event.selection.value
        spec = registered_passes()[name]
        text = Text(f"{PASS_NAMES.get(name, name)}: ", style="bold")
        text.append(spec.summary)
        self.query_one("#maintenance-pass-summary", Static).update(text)

    @on(RadioSet.Changed, "#maintenance-policy")
    def _policy_changed(self) -> None:
        self.show_params()

    @on(Select.Changed, "#maintenance-preset")
    def _preset_changed(self, event: Select.Changed) -> None:
        custom = self.query_one("#maintenance-date", Input)
        custom.display = event.value == OTHER_DATE
        if custom.display:
            custom.focus()
        self.show_when()

    @on(Input.Changed, "#maintenance-date")
    def _date_changed(self) -> None:
        self.show_when()

    @on(Input.Submitted)
    @on(Button.Pressed, "#maintenance-preview")
    def action_preview(self) -> None:
        request = self.request()
        if request is not None:
            from memory_console.tui.screens.preview import PreviewScreen

            self.app.push_screen(PreviewScreen(request))

    def request(self) -> PlanRequest | None:
        """The preview asked for, or None after saying what is wrong."""
        error = self.query_one("#maintenance-error", Static)
        now = self.context.now()
        try:
            if not self.chosen_passes:
                raise ValueError("choose at least one pass")
            moment = evaluation_time(self.when_text(), now)
            request = PlanRequest(
                self.chosen_passes,
                self.policy,
                self.query_one(ParamForm).overrides(),
                moment,
                now,
                self.store_settings,
            )
            request.params()
        except ValueError as problem:
            error.update(literal(str(problem), "bold red"))
            self.notify(str(problem), title="cannot preview", severity="error")
            return None
        error.update("")
        return request

    def action_defaults(self) -> None:
        self.query_one(ParamForm).clear()
        self.notify("every parameter is back to its default", timeout=3)

    def action_back(self) -> None:
        self.app.pop_screen()
