"""Permission rules: ``Tool`` / ``Tool(specifier)`` strings, parsed once and matched fast.

A :class:`RuleSet` compiles its rules when it is built: Bash patterns are indexed by their literal
first word and fused into one alternation regex per word, path patterns into one regex per anchor,
so that a check costs a few dictionary lookups and regex calls whatever the number of rules.

What a specifier means depends on the tool:

* ``Bash(spec)`` — a command pattern; see :func:`bash_pattern_regex`. The command line is analysed
  by :mod:`._bash` (tree-sitter-bash): every command in it is a part, output redirections are
  writes judged by ``Edit(...)`` rules, and what cannot be analysed is never allowed.
* ``Read(spec)`` / ``Edit(spec)`` — a gitignore-style path (:mod:`._paths`). ``Read`` governs the
  file-reading tools (Read, Glob, Grep, NotebookRead, LS), ``Edit`` every file-writing tool (Write,
  Edit, MultiEdit, NotebookEdit). A bare ``Read``/``Edit`` rule covers its whole family. A path is
  judged as written (``..`` applied after the links before it) and as its real target: deny and
  ask apply if either matches, allow needs both. Read deny and ask rules also cover the file
  arguments of well-known reading commands in Bash (:mod:`._reading`, best effort). An existing
  file with several hard links is approved by an ``Edit`` allow rule only if the rule names it
  exactly (no wildcard): a rule for a whole tree cannot tell where its other names lie.
* ``WebFetch(domain:host)`` — the URL's host equals ``host`` (case-insensitive, port ignored);
  ``domain:*.host`` matches any subdomain of ``host`` but not ``host`` itself.
* ``Agent(type)`` (alias ``Task``) — the input's ``subagent_type``; ``*`` is a wildcard.
* ``mcp__server`` and ``mcp__server__*`` — every tool of that MCP server.
* Any other tool: a bare name matches the tool; a specifier on it never matches (no semantics).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs

from ._bash_rules import bash_first_word, bash_pattern_regex, bash_relevant, match_bash
from ._memo import CallMemo
from ._path_rules import (
    edit_allowed,
    fixed_part,
    match_bash_reads,
    match_one_path,
    match_path,
    match_reads,
)
from ._paths import (
    EDIT_PATH_TOOLS,
    READ_PATH_TOOLS,
    compile_path_pattern,
    real,
)
from ._stars import stars

__all__ = ["PermissionRule", "RuleKind", "RuleSet", "bash_pattern_regex", "parse_rule"]

RuleKind = Literal["deny", "ask", "allow"]
#: Tool names whose bare-rule lookup a rule set remembers (beyond, it is looked up each time).
_BARE_CACHE_NAMES = 256

_TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]+(?:__\*)?")
_MCP_SERVER_RULE = re.compile(r"mcp__([^_].*?)(?:__\*)?")


@attrs.frozen
class PermissionRule:
    """One parsed rule: ``Bash(npm *)`` is ``PermissionRule("Bash", "npm *")``.

    ``str(rule)`` gives the rule back as written, for messages.
    """

    tool: str
    specifier: str | None = None

    def __str__(self) -> str:
        return self.tool if self.specifier is None else f"{self.tool}({self.specifier})"


def parse_rule(text: str) -> PermissionRule:
    """Parse ``Tool`` or ``Tool(specifier)``; raise ValueError naming the rule if malformed.

    Unknown tool names are accepted (the caller may warn): MCP and custom tools come and go.

    >>> parse_rule("Bash(npm run test:*)")
    PermissionRule(tool='Bash', specifier='npm run test:*')
    """
    if not isinstance(text, str):
        raise TypeError(f"permission rule must be a str, got {type(text).__name__}")
    rule = text.strip()

    def bad(why: str) -> ValueError:
        return ValueError(f"malformed permission rule {text!r}: {why}")

    if not rule:
        raise bad("empty rule")
    open_at = rule.find("(")
    if open_at < 0:
        if ")" in rule:
            raise bad("unexpected ')'")
        name, specifier = rule, None
    else:
        name = rule[:open_at].strip()
        if not rule.endswith(")"):
            raise bad("missing ')'" if rule.count("(") > rule.count(")") else "text after ')'")
        specifier = rule[open_at + 1 : -1]
        depth = 0
        for ch in specifier:
            depth += (ch == "(") - (ch == ")")
            if depth < 0:
                raise bad("unbalanced parentheses")
        if depth:
            raise bad("missing ')'")
        if not specifier.strip():
            raise bad("empty specifier (write the bare tool name to match every call)")
    if not name:
        raise bad("empty tool name")
    if not _TOOL_NAME.fullmatch(name):
        raise bad(f"invalid tool name {name!r}")
    if name == "WebFetch" and specifier is not None:
        host = specifier.removeprefix("domain:")
        if host == specifier or not host.strip():
            raise bad("WebFetch specifier must be 'domain:<host>'")
        try:
            rule_host(host)
        except ValueError as exc:
            raise bad(str(exc)) from None
    return PermissionRule(name, specifier)


@attrs.frozen
class Alternation:
    """Several rules fused into one ``(?P<r0>...)|(?P<r1>...)`` regex; ``match`` names the rule."""

    regex: re.Pattern[str]
    rules: tuple[PermissionRule, ...]
    #: group number -> the rule whose ``r<i>`` group it is (the outermost group closes last,
    #: so a match's ``lastindex`` is always one of them)
    _by_group: Mapping[int, PermissionRule] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        groups = self.regex.groupindex
        by_group = {groups[f"r{i}"]: rule for i, rule in enumerate(self.rules)}
        object.__setattr__(self, "_by_group", by_group)

    @classmethod
    def build(cls, items: list[tuple[str, PermissionRule]], flags: int = 0) -> Alternation:
        source = "|".join(f"(?P<r{i}>{body})" for i, (body, _) in enumerate(items))
        return cls(re.compile(source, flags | re.DOTALL), tuple(rule for _, rule in items))

    def match(self, text: str) -> PermissionRule | None:
        m = self.regex.fullmatch(text)
        if m is None:
            return None
        return self._by_group.get(m.lastindex or 0)


def _group(
    items: Iterable[tuple[str, str, PermissionRule]], flags: int = 0
) -> dict[str, Alternation]:
    grouped: dict[str, list[tuple[str, PermissionRule]]] = {}
    for key, body, rule in items:
        grouped.setdefault(key, []).append((body, rule))
    return {key: Alternation.build(group, flags) for key, group in grouped.items()}


@attrs.frozen
class KindIndex:
    """Every rule of one kind (deny, ask or allow), compiled and indexed by tool."""

    bare: Mapping[str, PermissionRule]
    mcp_servers: Mapping[str, PermissionRule]
    bash_by_word: Mapping[str, Alternation]
    bash_wild: Alternation | None
    bash_any: PermissionRule | None  # `Bash(*)`: covers even what cannot be analysed
    read_paths: Mapping[str, Alternation]  # anchor -> alternation
    edit_paths: Mapping[str, Alternation]
    domains: Mapping[str, PermissionRule]
    domain_wild: Alternation | None
    agents: Alternation | None
    #: Read rules by the fixed part of their pattern: (anchor, relative prefix, any depth)
    read_bases: tuple[tuple[str, str, bool, PermissionRule], ...] = ()
    #: Edit rules without a wildcard: (anchor, relative path) — they name one file exactly
    edit_literals: tuple[tuple[str, str, PermissionRule], ...] = ()
    #: Edit rules by the fixed part of their pattern, as ``read_bases``
    edit_bases: tuple[tuple[str, str, bool, PermissionRule], ...] = ()

    @classmethod
    def build(cls, rules: tuple[PermissionRule, ...]) -> KindIndex:
        bare: dict[str, PermissionRule] = {}
        mcp: dict[str, PermissionRule] = {}
        bash: list[tuple[str, str, PermissionRule]] = []
        reads: list[tuple[str, str, PermissionRule]] = []
        edits: list[tuple[str, str, PermissionRule]] = []
        domains: dict[str, PermissionRule] = {}
        domain_wild: list[tuple[str, str, PermissionRule]] = []
        agents: list[tuple[str, str, PermissionRule]] = []
        read_bases: list[tuple[str, str, bool, PermissionRule]] = []
        edit_literals: list[tuple[str, str, PermissionRule]] = []
        edit_bases: list[tuple[str, str, bool, PermissionRule]] = []
        for rule in rules:
            spec = rule.specifier
            server = _MCP_SERVER_RULE.fullmatch(rule.tool)
            if spec is None:
                if server and (rule.tool.endswith("__*") or "__" not in server.group(1)):
                    mcp.setdefault(server.group(1), rule)
                else:
                    bare.setdefault(rule.tool, rule)
            elif rule.tool == "Bash":
                bash.append((bash_first_word(spec) or "*", bash_pattern_regex(spec), rule))
            elif rule.tool in ("Read", "Edit"):
                anchor, body = compile_path_pattern(spec)
                (reads if rule.tool == "Read" else edits).append((anchor, body, rule))
                base, any_depth, literal = fixed_part(spec)
                if rule.tool == "Read":
                    read_bases.append((anchor, base, any_depth, rule))
                else:
                    edit_bases.append((anchor, base, any_depth, rule))
                    if literal:
                        edit_literals.append((anchor, base, rule))
            elif rule.tool == "WebFetch":
                host = rule_host(spec.removeprefix("domain:"))
                if "*" in host:
                    body = stars([re.escape(p) for p in host.split("*")])
                    domain_wild.append(("*", body, rule))
                else:
                    domains.setdefault(host, rule)
            elif rule.tool in ("Agent", "Task"):
                body = stars([re.escape(p) for p in spec.strip().split("*")])
                agents.append(("*", body, rule))
        by_word = _group(bash)
        return cls(
            bare=bare,
            mcp_servers=mcp,
            bash_by_word=by_word,
            bash_wild=by_word.pop("*", None),
            bash_any=next((r for _, _, r in bash if (r.specifier or "").strip() == "*"), None),
            read_paths=_group(reads),
            edit_paths=_group(edits),
            domains=domains,
            domain_wild=_group(domain_wild).get("*"),
            agents=_group(agents).get("*"),
            read_bases=tuple(read_bases),
            edit_literals=tuple(edit_literals),
            edit_bases=tuple(edit_bases),
        )

    def match_text(self, text: str) -> PermissionRule | None:
        """The Bash rule matching one command text, if any."""
        space = text.find(" ")
        alternation = self.bash_by_word.get(text if space < 0 else text[:space])
        if alternation is not None:
            m = alternation.regex.fullmatch(text)  # (`Alternation.match`, without the call)
            if m is not None:
                rule = alternation._by_group.get(m.lastindex or 0)
                if rule is not None:
                    return rule
        return self.bash_wild.match(text) if self.bash_wild is not None else None


def _normalize_host(host: str) -> str:
    """Lower case, no trailing dot, and an IP address in its one canonical form."""
    host = host.strip().lower().rstrip(".")
    if host[:1] == "[" and host[-1:] == "]":
        host = host[1:-1]
    return _canonical_address(host) or host


#: What the resolver may read as an IPv4 address: one to four numbers, decimal, octal (a leading
#: 0) or hexadecimal (0x), joined by dots (``inet_aton``'s forms)
_IPV4_FORMS = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}")


def _canonical_address(host: str) -> str | None:
    """``host`` as the address it names, when it is one: an IPv4 address in any of the
    resolver's spellings (``127.1``, ``0x7f000001``, ``2130706433``, ``017700000001``) as its
    dotted quad, an IPv6 address compressed, an IPv4-mapped one as its IPv4 address. Every
    spelling reaches the same machine, and a rule on one must cover the others. None for a
    name (or a wildcard)."""
    if ":" in host:
        try:
            address = ipaddress.IPv6Address(host)
        except ValueError:
            return None
        mapped = address.ipv4_mapped
        return str(mapped) if mapped is not None else address.compressed
    if not _IPV4_FORMS.fullmatch(host):
        return None
    try:
        return socket.inet_ntoa(socket.inet_aton(host))
    except OSError:
        return None  # a number too big for an address: the resolver takes it for no address


def url_host(url: str) -> str | None:
    """The host the WebFetch tool's client (httpx) connects to for ``url``, in its ASCII form
    (``xn--`` labels), lower case, without a trailing dot; None if httpx refuses the URL.

    The rule is judged on the very parse the fetch uses: another parser's host differs for
    ``http://evil\u3002com`` (httpx reads the ideographic full stop as a dot) and for
    ``http://xn--…`` against ``http://ä…`` (one host, two spellings), and a deny rule must
    not be walked around by spelling.
    """
    import httpx  # the client's own parser; loaded only when a domain rule is to be judged

    try:
        raw = httpx.URL(url).raw_host
    except (httpx.InvalidURL, ValueError, TypeError):
        return None
    return _normalize_host(raw.decode("latin-1"))


def rule_host(spec: str) -> str:
    """A ``domain:`` rule's host in :func:`url_host`'s form; each ``*`` stays. Raises
    ValueError naming the host if it is no host httpx accepts, or if a wildcard sits in a
    non-ASCII label (whose ``xn--`` form a ``*`` cannot stand inside)."""
    host = _normalize_host(spec)
    if host.isascii():
        return host
    import httpx

    labels = []
    for label in host.split("."):
        if label.isascii():
            labels.append(label)
            continue
        if "*" in label:
            raise ValueError(
                f"domain {spec!r}: a '*' inside the non-ASCII label {label!r} cannot match; "
                "write the label in its xn-- form"
            )
        try:
            labels.append(httpx.URL(f"http://{label}/").raw_host.decode("ascii"))
        except (httpx.InvalidURL, ValueError) as exc:
            raise ValueError(f"domain {spec!r}: invalid host label {label!r} ({exc})") from None
    return ".".join(labels)


def _rule_tuple(rules: Iterable[PermissionRule]) -> tuple[PermissionRule, ...]:
    return tuple(rules)


@attrs.frozen
class RuleSet:
    """The allow, deny and ask rules of a session, compiled once.

    Deny beats ask beats allow whatever their specificity: the pipeline asks :meth:`match` for
    each kind in that order.

    >>> rules = RuleSet.from_strings(allow=["Bash(npm *)"], deny=["Bash(rm *)"])
    >>> str(rules.match("allow", "Bash", {"command": "npm test"}, cwd="/r", home="/h"))
    'Bash(npm *)'
    >>> rules.match("allow", "Bash", {"command": "npm test && rm -rf x"}, cwd="/r", home="/h")
    """

    allow: tuple[PermissionRule, ...] = attrs.field(default=(), converter=_rule_tuple)
    deny: tuple[PermissionRule, ...] = attrs.field(default=(), converter=_rule_tuple)
    ask: tuple[PermissionRule, ...] = attrs.field(default=(), converter=_rule_tuple)
    _index: Mapping[str, KindIndex] = attrs.field(init=False, repr=False, eq=False)
    #: the kinds whose rules could decide a Bash call (computed once: every check asks)
    _bash_kinds: frozenset[str] = attrs.field(init=False, repr=False, eq=False)
    #: kind -> tool name -> the rule without a specifier covering it (the rules never change:
    #: every check of a tool asks the same three questions)
    _bare_found: dict[str, dict[str, PermissionRule | None]] = attrs.field(
        init=False, repr=False, eq=False
    )

    def __attrs_post_init__(self) -> None:
        for kind in ("allow", "deny", "ask"):
            for rule in getattr(self, kind):
                if not isinstance(rule, PermissionRule):
                    raise TypeError(
                        f"RuleSet.{kind} entries must be PermissionRule, got {type(rule).__name__}"
                    )
        index = {
            "allow": KindIndex.build(self.allow),
            "deny": KindIndex.build(self.deny),
            "ask": KindIndex.build(self.ask),
        }
        object.__setattr__(self, "_index", index)
        kinds = frozenset(k for k in ("allow", "deny", "ask") if bash_relevant(k, index))
        object.__setattr__(self, "_bash_kinds", kinds)
        object.__setattr__(self, "_bare_found", {"allow": {}, "deny": {}, "ask": {}})

    @classmethod
    def from_strings(
        cls, allow: Iterable[str] = (), deny: Iterable[str] = (), ask: Iterable[str] = ()
    ) -> RuleSet:
        """Parse rule strings (``allowed_tools``/``disallowed_tools`` style) into a RuleSet."""
        return cls(
            allow=tuple(parse_rule(r) for r in allow),
            deny=tuple(parse_rule(r) for r in deny),
            ask=tuple(parse_rule(r) for r in ask),
        )

    def removed_tools(self) -> frozenset[str]:
        """Names of bare deny rules: these tools are taken out of the model's tool list.

        ``mcp__server`` entries stand for all tools of that server; :meth:`removes_tool` applies
        that for one name.
        """
        return frozenset(rule.tool for rule in self.deny if rule.specifier is None)

    def names_tool(self, kind: RuleKind, tool_name: str) -> bool:
        """Whether a rule of ``kind`` without a specifier covers ``tool_name`` (its bare name,
        its MCP server, or its family: ``Read``, ``Edit``, ``Agent``)."""
        return self._bare_rule(self._index[kind], tool_name, families=True) is not None

    def names_agent_types(self, kind: RuleKind) -> bool:
        """Whether a rule of ``kind`` names agent types (``Agent(researcher)``)."""
        return self._index[kind].agents is not None

    def removes_tool(self, tool_name: str) -> bool:
        """Whether a bare deny rule removes ``tool_name`` entirely (MCP server rules included)."""
        return self._bare_rule(self._index["deny"], tool_name, families=False) is not None

    @staticmethod
    def _bare_rule(index: KindIndex, tool_name: str, *, families: bool) -> PermissionRule | None:
        rule = index.bare.get(tool_name)
        if rule is not None:
            return rule
        if tool_name.startswith("mcp__") and index.mcp_servers:
            server = tool_name[5:].partition("__")[0]
            rule = index.mcp_servers.get(server)
            if rule is not None:
                return rule
        if families:
            if tool_name in READ_PATH_TOOLS:
                return index.bare.get("Read")
            if tool_name in EDIT_PATH_TOOLS:
                return index.bare.get("Edit")
            if tool_name == "Task":
                return index.bare.get("Agent")
        return None

    def match_reads(
        self,
        kind: RuleKind,
        argv: tuple[str, ...],
        *,
        cwd: str,
        home: str,
        directory: str | None = None,
        inputs: Sequence[str] = (),
        memo: CallMemo | None = None,
    ) -> PermissionRule | None:
        """The Read rule of ``kind`` covering a file one simple command reads: ``argv`` its
        words (quotes removed, wrappers and redirections removed, ``argv[0]`` the command),
        ``inputs`` the targets of its input redirections (``< file``), ``directory`` the
        directory it runs in (after any ``cd`` before it; default ``cwd``, where the rules are
        anchored). For the Bash analysis: deny and ask rules only (an allow rule for Read never
        approves a command)."""
        if kind == "allow":
            return None
        index = self._index[kind]
        where = directory if directory is not None else cwd
        return match_reads(index, argv, where, cwd, home, memo or CallMemo(), inputs)

    def read_deny_matcher(self, cwd: str, home: str) -> Callable[[str, str], bool] | None:
        """A test ``(written, target) -> bool`` for "a Read deny rule covers this file", with
        the anchors resolved once (search tools apply it to every file they would list), or
        None when no Read deny rule exists."""
        index = self._index["deny"]
        if index.bare.get("Read") is not None:
            return lambda written, target: True
        by_anchor = index.read_paths
        if not by_anchor:
            return None
        anchors = {"root": "/", "home": home, "cwd": cwd}
        real_anchors = {"root": "/", "home": real(home), "cwd": real(cwd)}

        resolved_differ = real_anchors != anchors

        def denied(written: str, target: str) -> bool:
            if match_one_path(by_anchor, anchors, written) is not None:
                return True
            if target != written and match_one_path(by_anchor, anchors, target) is not None:
                return True
            return resolved_differ and match_one_path(by_anchor, real_anchors, target) is not None

        return denied

    def match(
        self,
        kind: RuleKind,
        tool_name: str,
        tool_input: Mapping[str, Any],
        *,
        cwd: str,
        home: str,
    ) -> PermissionRule | None:
        """The rule of ``kind`` that covers this call, or None.

        For Bash, a deny or ask rule covers a compound command if it matches *any* part; an allow
        rule result means *every* part matched some allow rule (the one returned matched the
        first part). For paths, symlinks are followed: an allow must match both the link and its
        target, a deny or ask either of them.
        """
        return self._match(kind, tool_name, tool_input, cwd, home, CallMemo())

    def _match(
        self,
        kind: RuleKind,
        tool_name: str,
        tool_input: Mapping[str, Any],
        cwd: str,
        home: str,
        memo: CallMemo,
    ) -> PermissionRule | None:
        """:meth:`match` sharing splits and resolved paths with the rest of one check."""
        index = self._index[kind]
        bare = self._bare_found[kind]
        if tool_name in bare:
            rule = bare[tool_name]
        else:
            rule = self._bare_rule(index, tool_name, families=True)
            if len(bare) < _BARE_CACHE_NAMES:
                bare[tool_name] = rule
        if rule is not None:
            return rule
        if tool_name == "Bash":
            command = tool_input.get("command")
            if not isinstance(command, str):
                return None
            analysis = memo.bash(command)
            found = None
            if kind in self._bash_kinds:
                found = match_bash(kind, self._index, analysis, cwd, home, memo)
            if found is None and kind != "allow" and index.read_paths:
                found = match_bash_reads(index, analysis, cwd, home, memo)
            return found
        if tool_name in READ_PATH_TOOLS:
            return match_path(kind, index.read_paths, tool_name, tool_input, cwd, home, memo)
        if tool_name in EDIT_PATH_TOOLS:
            if kind == "allow":
                path = memo.tool_path(tool_name, tool_input, cwd, home)
                return None if path is None else edit_allowed(index, path, cwd, home, memo)
            return match_path(kind, index.edit_paths, tool_name, tool_input, cwd, home, memo)
        if tool_name == "WebFetch":
            return _match_domain(index, tool_input)
        if tool_name in ("Agent", "Task"):
            agent = tool_input.get("subagent_type")
            if index.agents is None or not isinstance(agent, str):
                return None
            return index.agents.match(agent)
        return None


def _match_domain(index: KindIndex, tool_input: Mapping[str, Any]) -> PermissionRule | None:
    url = tool_input.get("url")
    if not isinstance(url, str) or (not index.domains and index.domain_wild is None):
        return None
    host = url_host(url)
    if not host:
        return None
    rule = index.domains.get(host)
    if rule is None and index.domain_wild is not None:
        rule = index.domain_wild.match(host)
    return rule
