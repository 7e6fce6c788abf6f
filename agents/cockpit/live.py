"""The live agent tree drawn with ``rich``: one row per agent, the budget as a bar, the text below.

:func:`render` turns a :class:`~agents.cockpit.state.TreeState` into a renderable; :class:`LiveTree`
keeps it on screen while a session runs, redrawn on every message and ten times a second (the
running tools' elapsed times tick), and leaves the last frame in place when it closes::

    async with open_live_tree(console, state) as live:
        async for message in query(prompt=..., options=options):
            live.observe(message)

What a person sees (a capture of ``agents demo`` is in the README)::

    agent                          status          turns      cost  now
    main                           running tools       1   $0.0236  Agent explain the store 0.1 s
    ├─ researcher-1  explain …     thinking            1   $0.0126
    budget ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━  $0.0362 of $0.0800 (45%)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import attrs
import trio
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from .lines import printable
from .state import AgentNode, TreeState

if TYPE_CHECKING:
    from ..messages import Message

__all__ = ["LiveTree", "open_live_tree", "render", "render_budget", "render_tree"]

_STYLES = {
    "starting": "dim",
    "thinking": "cyan",
    "running tools": "yellow",
    "waiting": "magenta",
    "done": "green",
    "stopped": "red",
    "failed": "bold red",
}
_TEXT_LINES = 12  # the tail of the streaming text kept in the live area


def _name(prefix: str, node: AgentNode) -> Text:
    # (what the stream says, shown on the terminal: written out by ``printable``, here and below)
    name = printable(node.label.rsplit("/", 1)[-1])
    label = Text(prefix + name, style="" if prefix else "bold")
    if node.background:
        label.append(" (bg)", style="dim")
    if node.description:
        label.append(f"  {printable(node.description)}", style="dim")
    return label


def _rows(state: TreeState) -> list[tuple[str, AgentNode]]:
    """Every agent with its tree prefix (``├─ ``, ``│  └─ ``...), parents first."""
    rows: list[tuple[str, AgentNode]] = []

    def visit(node: AgentNode, lead: str, branch: str) -> None:
        rows.append((lead + branch, node))
        inner = lead + ("" if not branch else "   " if branch == "└─ " else "│  ")
        for i, key in enumerate(node.children):
            visit(state.nodes[key], inner, "└─ " if i == len(node.children) - 1 else "├─ ")

    visit(state.main, "", "")
    return rows


def _short(detail: str) -> str:
    """A path's last component (the rest is the project's, known to the reader)."""
    detail = " ".join(detail.split())
    if detail.startswith("/") and " " not in detail:
        return detail.rsplit("/", 1)[-1] or detail
    return detail if len(detail) <= 40 else detail[:39] + "…"


def _now(node: AgentNode, now: float) -> Text:
    """The running tool calls with their elapsed time, or the pending retry."""
    if node.retry and not node.tools:
        return Text(printable(node.retry), style="yellow")
    parts = [
        f"{tool.name}{' ' + _short(tool.detail) if tool.detail else ''} {now - tool.started:.1f} s"
        for tool in node.tools.values()
    ]
    return Text(printable(" · ".join(parts)), overflow="ellipsis", no_wrap=True)


def render_tree(state: TreeState, now: float | None = None) -> RenderableType:
    """One row per agent: name (indented as the tree), status, turns, cost, running calls.

    Laid out for the width it is drawn at: the agent names and the running calls are cut to
    fit (with an ellipsis), never the figures.
    """
    return _Tree(state, state.clock() if now is None else now)


@attrs.frozen
class _Tree:
    state: TreeState
    now: float

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rows = _rows(self.state)
        busy = any(node.tools or node.retry for _, node in rows)
        names = [_name(prefix, node) for prefix, node in rows]
        statuses = [_status(node) for _, node in rows]
        status_width = max(6, *(s.cell_len for s in statuses))
        gaps = 2 * (4 if busy else 3)  # two spaces between columns
        fixed = status_width + 5 + 9 + gaps  # status, turns, cost
        room = options.max_width - fixed - (24 if busy else 0)
        name_width = max(8, min(max(5, *(n.cell_len for n in names)), room))
        for name in names:
            name.truncate(name_width, overflow="ellipsis")
        table = Table(box=None, pad_edge=False, expand=False, show_edge=False, padding=(0, 2, 0, 0))
        table.add_column("agent", no_wrap=True)
        table.add_column("status", no_wrap=True)
        table.add_column("turns", justify="right", no_wrap=True, min_width=5)
        table.add_column("cost", justify="right", no_wrap=True, min_width=9)
        now_width = options.max_width - fixed - name_width
        if busy:
            table.add_column("now", no_wrap=True)
        for name, status, (_, node) in zip(names, statuses, rows, strict=True):
            cells: list[Text | str] = [name, status, str(node.turns), f"${node.cost_usd:.4f}"]
            if busy:
                now = _now(node, self.now)
                now.truncate(max(8, now_width), overflow="ellipsis")
                cells.append(now)
            table.add_row(*cells)
        yield table


def _status(node: AgentNode) -> Text:
    status = Text(node.status, style=_STYLES.get(node.status, ""))
    if node.denials:
        status.append(f" ({node.denials} denied)", style="red")
    return status


def render_budget(state: TreeState, width: int = 30) -> RenderableType:
    """The tree's spend against its budget, as a bar (or the spend alone without a budget)."""
    spent = state.total_cost_usd
    cap = state.budget_usd
    if cap is None:
        return Text(f"spent ${spent:.4f} (no budget set)", style="dim")
    grid = Table.grid(padding=(0, 1))
    grid.add_column()
    grid.add_column(width=width)
    grid.add_column()
    share = spent / cap if cap else 1.0
    style = "red" if share >= 1 else "yellow" if share >= 0.8 else "green"
    bar = ProgressBar(total=max(cap, 1e-12), completed=min(spent, cap), width=width,
                      complete_style=style, finished_style=style)  # fmt: skip
    verdict = " reached" if share >= 1 else ""
    grid.add_row("budget", bar, Text(f"${spent:.4f} of ${cap:.4f} ({share:.0%}){verdict}", style))
    return grid


def render(state: TreeState, now: float | None = None, *, text: bool = True) -> RenderableType:
    """The whole cockpit: the tree, the budget bar, the latest notices and the streaming text."""
    parts: list[RenderableType] = [render_tree(state, now), render_budget(state)]
    for line in state.events[-3:]:
        parts.append(Text(printable(line), style="yellow", overflow="ellipsis", no_wrap=True))
    if text and state.text:
        tail = "\n".join(state.text.strip("\n").splitlines()[-_TEXT_LINES:])
        parts.append(Text(""))
        parts.append(Text(printable(tail, lines=True)))
    return Group(*parts)


@attrs.define(eq=False)
class LiveTree:
    """Keeps :func:`render` of ``state`` on ``console`` while the session runs.

    Made by :func:`open_live_tree`, which owns the ticker task (so elapsed times move between
    messages). Drawing happens only from the Trio thread: rich's own refresh thread is off.
    """

    console: Console
    state: TreeState
    keep_text: bool = True
    _live: Live | None = None

    def observe(self, message: Message) -> None:
        """Update the tree from a message and redraw at once."""
        self.state.observe(message)
        self.refresh()

    def refresh(self) -> None:
        if self._live is not None:
            self._live.update(render(self.state), refresh=True)

    def start(self) -> None:
        self._live = Live(
            render(self.state),
            console=self.console,
            auto_refresh=False,
            transient=False,
            redirect_stdout=False,
            redirect_stderr=False,
            vertical_overflow="visible",
        )
        self._live.start()

    def stop(self) -> None:
        """Draw the last frame (without the streamed text unless ``keep_text``) and let go."""
        live, self._live = self._live, None
        if live is not None:
            live.update(render(self.state, text=self.keep_text), refresh=True)
            live.stop()

    async def tick(self, interval: float) -> None:
        while True:
            await trio.sleep(interval)
            self.refresh()


@asynccontextmanager
async def open_live_tree(
    console: Console, state: TreeState, *, keep_text: bool = True, interval: float = 0.1
) -> AsyncIterator[LiveTree]:
    """Show the live tree on ``console`` for the duration of the block; the last frame stays.

    ``keep_text=False`` leaves the streamed text out of the last frame (``agents run`` prints the
    result on stdout instead). When the block ends normally, agents still marked running are
    shown as ended (the stream is over).
    """
    live = LiveTree(console, state, keep_text)
    live.start()
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(live.tick, interval)
            try:
                yield live
            finally:
                nursery.cancel_scope.cancel()
        state.finish()
    finally:
        live.stop()
