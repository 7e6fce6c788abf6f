"""From a tree-sitter-bash syntax tree to what a command line would do.

The walk lists every simple command that may run, wherever it sits (lists, pipelines, subshells,
groups, ``if``/``for``/``while``/``case`` bodies, function bodies, command and process
substitutions, here-strings, expanding here-documents, arithmetic, and the literal scripts of
``eval``, ``sh -c`` and ``env -S``), every file an output redirection writes, and every construct
it cannot decide statically (an *opaque* one).

It also follows the shell's directory: each command carries the set of directory changes
(``cd``/``pushd`` targets, relative to the session's directory) it may run after. ``cd a && x``
runs ``x`` in ``a``; ``cd a; x`` in ``a`` or, if ``cd`` failed, where it was. A ``cd`` whose
target is not static, or a loop or opaque construct that may move, makes the directory unknown
(``None``), which every path check treats as failing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

from ._bash_commands import (
    MAX_DEPTH,
    RESERVED,
    RUN_CONTROL_VARIABLES,
    SAFE_NAME,
    SPECIAL_NAMES,
    SimpleCommands,
)
from ._bash_model import (
    Analysis,
    Command,
    Dirs,
    Opaque,
    Result,
    Write,
    cd_dirs,
    new_command,
    union,
    union_all,
)
from ._bash_syntax import (
    after_target,
    descendants,
    hidden_substitution,
    newline_between,
    split_word,
)
from ._bash_words import PLAIN_BYTES, Word, literal_word, node_text, plain_word, word_from_node
from ._bash_wrappers import NOT_WRAPPED, Unwrapped

__all__ = ["MAX_DEPTH", "Walker"]

_OUTPUT_OPERATORS = frozenset({">", ">>", "&>", "&>>", ">|", ">&", "<>"})
_INPUT_OPERATORS = frozenset({"<", "<>"})
#: Paths bash itself turns into a socket in a redirection: network egress, never a file.
_SOCKETS = ("/dev/tcp/", "/dev/udp/")
_ARITHMETIC_VARIABLES = frozenset(
    {"word", "variable_name", "simple_expansion", "expansion", "subscript"}
)
_ARITHMETIC_TEST = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_MAY_CHANGE_DIR = re.compile(r"cd|pushd|popd|eval")
#: An element of a compound assignment whose subscript is a plain number: ``[3]=x``.
_NUMBERED_ELEMENT = re.compile(r"\[[0-9]+\]\+?=")


def _all(subscript: Node) -> bool:
    """``name[@]`` or ``name[*]``: every element, no index evaluated."""
    index = subscript.children[2:3]
    return bool(index) and index[0].type == "word" and index[0].text in (b"@", b"*")


def _literal_index(subscript: Node) -> bool:
    """``name[3]``: an index that is a number evaluates nothing."""
    index = subscript.children[2:-1]
    return len(index) == 1 and index[0].type == "number"


class Walker(SimpleCommands):
    """One analysis: walks a tree (and the literal scripts nested in it) into an Analysis."""

    def analysis(self) -> Analysis:
        fields = (tuple(self.commands), tuple(self.writes), tuple(self.opaque), tuple(self.reads))
        return _new_tuple(Analysis, fields)  # (`Analysis(*fields)`, without its frame)

    # -- statements ---------------------------------------------------------------------------

    def statements(self, nodes: Iterable[Node], dirs: Dirs, depth: int) -> Result:
        """A sequence (``;``, newline, ``&``): each statement starts where the last one ended."""
        result: Result = (dirs, dirs)
        current = dirs
        # (`next_sibling` costs a walk over the parent's children)
        siblings = nodes if isinstance(nodes, list) else list(nodes)
        for index, node in enumerate(siblings):
            if not node.is_named or node.type == "comment":
                continue
            result = self.walk(node, current, depth)
            if index + 1 < len(siblings) and siblings[index + 1].type == "&":
                result = (current, current)  # runs in the background, in a subshell
            ok, failed = result
            current = ok if ok is failed else union(ok, failed)
        return result

    def walk(self, node: Node, dirs: Dirs, depth: int, redirects: Sequence[Node] = ()) -> Result:
        """One statement; ``redirects`` are those tree-sitter hung on an enclosing statement."""
        if depth > MAX_DEPTH:
            self.fail(f"nesting deeper than {MAX_DEPTH} levels")
            return None, None
        kind = node.type
        if kind == "command":
            return self._command(node, dirs, depth, redirects)
        if kind == "redirected_statement":
            source = self.source
            own = [
                c
                for c in node.named_children
                if c.type.endswith("redirect")
                # `2>&1`: a descriptor copied, no file, no word: nothing to judge (a test
                # compares the walk with it judged)
                and not (_FAST_WORDS and source[c.start_byte : c.end_byte] in _DESCRIPTOR_COPIES)
            ]
            body = node.child_by_field_name("body")
            if body is None:
                self.redirects([*redirects, *own], dirs, depth)
                return dirs, dirs
            return self.walk(body, dirs, depth, [*own, *redirects])
        if kind == "list":
            return self._list(node, dirs, depth, redirects)
        if kind == "pipeline":
            parts = [c for c in node.named_children if c.type != "comment"]
            for index, part in enumerate(parts):
                self.walk(part, dirs, depth + 1, redirects if index == len(parts) - 1 else ())
            return dirs, dirs
        if kind == "negated_command":
            inner = [c for c in node.named_children if c.type != "comment"]
            if redirects and len(inner) == 1:  # `! rm >x -rf /`: the redirection is rm's
                ok, failed = self.walk(inner[0], dirs, depth, redirects)
                return failed, ok
            self.redirects(redirects, dirs, depth)
            ok, failed = self.statements(node.children, dirs, depth)
            return failed, ok
        if any(after_target(redirect) for redirect in redirects):
            self.fail("words after the redirection of a compound command")
        self.redirects(redirects, dirs, depth)
        if kind == "subshell":
            self.statements(node.children, dirs, depth + 1)
            return dirs, dirs
        if kind in ("compound_statement", "do_group"):
            if node.child_count and node.children[0].type == "((":
                self._arithmetic(node, dirs, depth)
                return dirs, dirs
            return self.statements(node.children, dirs, depth + 1)
        handler = _STATEMENTS.get(kind)
        if handler is not None:
            return handler(self, node, dirs, depth)
        if kind == "ERROR":
            self.fail("the command does not parse")
        else:
            self.fail(f"{kind} is not analysed")
        self.scan(node, dirs, depth)
        return None, None

    def _list(self, node: Node, dirs: Dirs, depth: int, redirects: Sequence[Node]) -> Result:
        """``a && b || c``, left-nested in the tree: flattened, so long chains cost no stack."""
        chain: list[tuple[str, Node]] = []
        while node.type == "list" and node.child_count >= 3:
            chain.append((node.children[1].type, node.children[-1]))
            node = node.children[0]
        chain.reverse()
        ok, failed = self.walk(node, dirs, depth, redirects if not chain else ())
        for index, (operator, right) in enumerate(chain):
            last = redirects if index == len(chain) - 1 else ()
            if operator == "&&":
                r_ok, r_failed = self.walk(right, ok, depth, last)
                ok, failed = r_ok, union(failed, r_failed)
            else:
                r_ok, r_failed = self.walk(right, failed, depth, last)
                ok, failed = union(ok, r_ok), r_failed
        return ok, failed

    def _if(self, node: Node, dirs: Dirs, depth: int) -> Result:
        ends: list[Dirs] = []
        failed = self._branch(node, dirs, depth, ends)
        else_seen = False
        for clause in node.named_children:
            if clause.type == "elif_clause":
                failed = self._branch(clause, failed, depth, ends)
            elif clause.type == "else_clause":
                else_seen = True
                ends.extend(self.statements(clause.children, failed, depth + 1))
        if not else_seen:
            ends.append(failed)
        after = union_all(ends)
        return after, after

    def _branch(self, node: Node, dirs: Dirs, depth: int, ends: list[Dirs]) -> Dirs:
        """``if|elif cond; then body``: the body's ends go to ``ends``; returns cond's failure."""
        condition: list[Node] = []
        body: list[Node] = []
        target = condition
        for child in node.children:
            if child.type == "then":
                target = body
            elif child.is_named and child.type not in ("elif_clause", "else_clause"):
                target.append(child)
        ok, failed = self.statements(condition, dirs, depth + 1)
        ends.extend(self.statements(body, ok, depth + 1))
        return failed

    def _loop(self, node: Node, dirs: Dirs, depth: int) -> Result:
        """A body may run several times: if it may move, where it runs is unknown."""
        start = None if _MAY_CHANGE_DIR.search(node_text(node, self.source)) else dirs
        if node.type == "for_statement":
            variable = node.child_by_field_name("variable")
            if variable is not None and node_text(variable, self.source) in RUN_CONTROL_VARIABLES:
                self.fail(f"the loop sets {node_text(variable, self.source)}")
            for value in node.children_by_field_name("value"):
                self.scan(value, dirs, depth)
        elif node.type == "c_style_for_statement":
            for child in node.named_children:
                if child.type != "do_group" and child.type != "compound_statement":
                    self._arithmetic(child, dirs, depth)
        condition = [c for c in node.children_by_field_name("condition") if c.is_named]
        ok, failed = self.statements(condition, start, depth + 1)
        body = node.child_by_field_name("body")
        if body is not None:
            self.walk(body, failed if node.children[0].type == "until" else ok, depth + 1)
        return start, start

    def _case(self, node: Node, dirs: Dirs, depth: int) -> Result:
        value = node.child_by_field_name("value")
        if value is not None:
            self.scan(value, dirs, depth)
        ends: list[Dirs] = [dirs]
        for item in node.named_children:
            if item.type != "case_item":
                continue
            body = []
            for index, child in enumerate(item.children):
                field = item.field_name_for_child(index)
                if field == "value":
                    self.scan(child, dirs, depth)
                elif child.is_named and field is None:
                    body.append(child)
            ends.extend(self.statements(body, dirs, depth + 1))
        after = union_all(ends)
        return after, after

    def _function(self, node: Node, dirs: Dirs, depth: int) -> Result:
        self.fail("a function definition changes what a command name runs")
        body = node.child_by_field_name("body")
        if body is not None:
            own = [c for c in node.named_children if c.type.endswith("redirect")]
            self.walk(body, None, depth + 1, own)
        return dirs, dirs

    def _assignment(self, node: Node, dirs: Dirs, depth: int) -> Result:
        assignments = [node] if node.type == "variable_assignment" else node.named_children
        words = []
        for assignment in assignments:
            self.scan(assignment, dirs, depth)
            self._check_assignment(assignment)
            words.append(Word(node_text(assignment, self.source), None))
        self.commands.append(new_command((), tuple(words), Unwrapped(starts=[0]), dirs))
        return dirs, dirs

    def _declaration(self, node: Node, dirs: Dirs, depth: int) -> Result:
        """``export``/``declare``/``local``/``readonly``/``typeset``/``unset``: a command."""
        words = [Word(node.children[0].type, node.children[0].type)]
        for child in node.named_children:
            self.scan(child, dirs, depth)
            if child.type == "variable_assignment":
                self._check_assignment(child)
                words.append(Word(node_text(child, self.source), None))
            else:
                words.append(word_from_node(child, self.source))
        return self.simple(words, [], dirs, depth)

    def _test(self, node: Node, dirs: Dirs, depth: int) -> Result:
        """``[[ … ]]`` runs nothing itself, but arithmetic comparisons evaluate variables, and
        so does ``-v`` the subscript of the name it tests."""
        for child in descendants(node):
            if child.type == "unary_expression":
                test, *operand = child.children
                if node_text(test, self.source) == "-v" and not (
                    len(operand) == 1 and SAFE_NAME.fullmatch(node_text(operand[0], self.source))
                ):
                    self.fail("[[ -v ]] evaluates the subscript of the name it tests")
            elif child.type == "binary_expression":
                operator = child.child_by_field_name("operator")
                if operator is not None and node_text(operator, self.source) in _ARITHMETIC_TEST:
                    for side in (
                        child.child_by_field_name("left"),
                        child.child_by_field_name("right"),
                    ):
                        if side is not None and side.type != "number":
                            self.fail("[[ -eq ]] evaluates a variable's value as arithmetic")
        self.scan(node, dirs, depth)
        return dirs, dirs

    # -- words, substitutions and redirections ------------------------------------------------

    def scan(self, node: Node, dirs: Dirs, depth: int) -> None:
        """Every substitution inside ``node`` runs (in a subshell, before the command)."""
        stack = [node]
        while stack:
            current = stack.pop()
            kind = current.type
            if kind in ("command_substitution", "process_substitution"):
                if (
                    current.children[0].type == "`"
                    and self.source.find(b"\\`", current.start_byte, current.end_byte) >= 0
                ):
                    self.fail("nested backquotes are not analysed")
                if depth + 1 > MAX_DEPTH:
                    self.fail(f"nesting deeper than {MAX_DEPTH} levels")
                else:
                    self.statements(current.children, dirs, depth + 1)
            elif kind == "arithmetic_expansion":
                self._arithmetic(current, dirs, depth)
            elif current.child_count:
                if kind == "expansion":
                    self._expansion(current.children)
                stack.extend(current.children)
            elif kind in _TEXT_LEAVES and hidden_substitution(node_text(current, self.source)):
                # tree-sitter-bash leaves some substitutions as text (backquotes in a
                # here-document or in `${x:-…}`): they run all the same
                self.fail("a substitution the grammar leaves unparsed")

    def _expansion(self, parts: Sequence[Node]) -> None:
        """``${…}`` forms that evaluate a variable's value: an indexed array's subscript and a
        substring's offset and length are arithmetic, ``${!name}`` reads the variable a value
        names (a subscripted name is arithmetic again), ``@P`` expands a value as a prompt.
        With a value such as ``a[$(cmd)]`` or ``$(cmd)``, each runs ``cmd``."""
        kinds = [part.type for part in parts]
        if kinds[1:2] == ["!"] and not (
            kinds[-2:-1] in (["*"], ["@"]) or (kinds[2:3] == ["subscript"] and _all(parts[2]))
        ):
            self.fail("an indirect expansion evaluates the name a variable holds")
        for index, kind in enumerate(kinds):
            if kind == "subscript" and not _all(parts[index]) and not _literal_index(parts[index]):
                self.fail("an array subscript is arithmetic on a variable's value")
            elif kind == "@" and kinds[index + 1 : index + 2] == ["P"]:
                self.fail("a prompt expansion runs the substitutions in a variable's value")
            elif kind == ":" and any(
                other not in ("number", ":", "}", "-") for other in kinds[index + 1 :]
            ):
                self.fail("a substring's offset is arithmetic on a variable's value")

    def _arithmetic(self, node: Node, dirs: Dirs, depth: int) -> None:
        """Arithmetic runs substitutions, and evaluates variables' values as expressions."""
        stack = list(node.children)
        while stack:
            current = stack.pop()
            if current.type in ("command_substitution", "process_substitution"):
                self.scan(current, dirs, depth)
            elif current.type in _ARITHMETIC_VARIABLES:
                self.fail("arithmetic on a variable's value may run commands")
                self.scan(current, dirs, depth)
            elif current.type in ("raw_string", "string"):
                # `$(( 'a[$(x)]' ))`: bash evaluates the quoted text as an expression
                self.fail("a quoted string in arithmetic is evaluated as an expression")
                self.scan(current, dirs, depth)
            else:
                stack.extend(current.children)

    def redirects(self, nodes: Iterable[Node], dirs: Dirs, depth: int) -> None:
        """Output redirections are writes; here-documents and here-strings may substitute."""
        for node in nodes:
            if node.type == "file_redirect":
                operator = next((c.type for c in node.children if not c.is_named), "")
                destination = node.child_by_field_name("destination")
                if destination is None:
                    self.scan(node, dirs, depth)
                    continue
                word = plain_word(destination, self.source)  # plain text holds no substitution
                if word is None:
                    self.scan(destination, dirs, depth)
                    if destination.type == "process_substitution":
                        continue
                    word = word_from_node(destination, self.source)
                if word.value is not None and word.value.startswith(_SOCKETS):
                    self.fail("a redirection to /dev/tcp or /dev/udp opens a network connection")
                if operator in _INPUT_OPERATORS:
                    self.reads.append(Write(word, dirs))
                if operator not in _OUTPUT_OPERATORS:
                    continue
                if (
                    operator == ">&"
                    and word.value is not None
                    and (word.value.isdigit() or word.value == "-")
                ):
                    continue  # `>&2`: a descriptor, not a file
                self.writes.append(Write(word, dirs))
            elif node.type == "heredoc_redirect":
                children = node.named_children
                self.redirects([c for c in children if c.type == "file_redirect"], dirs, depth)
                start = next((c for c in children if c.type == "heredoc_start"), None)
                if start is not None and _QUOTED_DELIMITER.search(node_text(start, self.source)):
                    continue  # a quoted delimiter: the body is literal text
                for child in children:
                    if child.type == "heredoc_body":
                        self.scan(child, dirs, depth)
            else:
                self.scan(node, dirs, depth)

    def _check_assignment(self, node: Node) -> None:
        """An assignment runs what its value's substitutions run (scanned apart); besides, it
        may change what commands run, and an indexed array's subscript is arithmetic, which
        expands a ``$(…)`` even from quotes (``a['$(cmd)']=1``) and evaluates the values of the
        variables it names (``a[i]=1``, ``a=([i]=1)``): only a number is left alone."""
        name = node.child_by_field_name("name")
        text = (
            node_text(name, self.source)
            if name is not None
            else node_text(node, self.source).partition("=")[0]
        )
        if text.partition("[")[0] in RUN_CONTROL_VARIABLES or text.startswith("BASH_FUNC_"):
            self.fail(f"setting {text} changes what commands run")
        if name is not None and name.type == "subscript" and not _literal_index(name):
            self.fail("an array subscript is arithmetic on a variable's value")
        value = node.child_by_field_name("value")
        if value is not None and value.type == "array":
            for element in value.named_children:
                element_text = node_text(element, self.source)
                if element_text.startswith("[") and not _NUMBERED_ELEMENT.match(element_text):
                    self.fail("an array subscript is arithmetic on a variable's value")

    # -- simple commands -----------------------------------------------------------------------

    def _command(self, node: Node, dirs: Dirs, depth: int, redirects: Sequence[Node]) -> Result:
        """One simple command: its children sorted into assignments, words and redirections in
        one pass; words of plain literal text (most) decoded on the spot, the others scanned
        for substitutions and decoded in full."""
        source = self.source
        start, end = node.start_byte, node.end_byte
        extra = (
            [word for redirect in redirects for word in after_target(redirect)]
            if redirects
            else None
        )
        if _FAST_WORDS and not extra and _PLAIN_COMMAND.fullmatch(source, start, end):
            # words of plain literal text, single spaces between (most commands): each means
            # itself, and no assignment, redirection, substitution or line break is among them
            text = source[start:end].decode("ascii")
            texts = text.split(" ")
            if node.child_count == len(texts):  # one child per word, nothing the grammar added
                if redirects:
                    self.redirects(list(redirects), dirs, depth)
                # (`Word(t, t)` for each, made without a Python frame)
                # (no `strict=`: a keyword makes `zip` parse its arguments the slow way)
                fields = zip(texts, texts, _NO, _NONE, _NO)  # noqa: B905
                plain_words = tuple(map(_new_tuple, _WORDS, fields))
                head = texts[0]
                if head in SPECIAL_NAMES or "/" in head:
                    if head == "cd" and len(texts) == 2 and _PLAIN_CD.fullmatch(texts[1]):
                        # `cd src`: what `judge` and `_cd` make of it (a test compares them),
                        # plain: its one spelling is its text, it reads and removes nothing
                        command = (plain_words, (), NOT_WRAPPED, dirs, False, True, text)
                        self.commands.append(_new_tuple(Command, command))
                        if dirs is None:
                            return None, None
                        return cd_dirs(dirs, texts[1], self.places), dirs
                    return self.simple(list(plain_words), [], dirs, depth, plain=True)
                # what `simple` lists for an ordinary command (no word holds `=` here), made
                # here: its text is the command's own, words joined by single spaces
                command = (plain_words, (), NOT_WRAPPED, dirs, False, True, text)
                self.commands.append(_new_tuple(Command, command))
                return dirs, dirs
        elif _FAST_WORDS and not redirects and _LITERAL_COMMAND.fullmatch(source, start, end):
            # plain words and quoted literals (``-m "fix: x"``, ``'def main'``), single spaces
            # between, nothing around it: each quoted one means what is between its quotes
            # (as `literal_word` decodes it), and no substitution, assignment, redirection, line
            # break or split word is among them
            text = source[start:end].decode("utf-8", "surrogateescape")
            texts = _LITERAL_TOKEN.findall(text)
            if node.child_count == len(texts):  # one child per word, nothing the grammar added
                literal_words = [
                    _new_tuple(Word, (t, t[1:-1] if t[0] in "'\"" else t, False, None, False))
                    for t in texts
                ]
                name = texts[0] if texts[0][0] not in "'\"" else texts[0][1:-1]
                if name in SPECIAL_NAMES or texts[0] in RESERVED or "/" in name:
                    return self.simple(literal_words, [], dirs, depth)
                # what `simple` lists for an ordinary command (no word holds `=` here): its
                # text is the command's own, words joined by single spaces; a quoted word
                # is among them, so it is not plain
                command = (tuple(literal_words), (), NOT_WRAPPED, dirs, False, False, text)
                self.commands.append(_new_tuple(Command, command))
                return dirs, dirs
        assignments: list[Node] = []
        words: list[Node] = []
        decoded: list[Word] = []
        own = list(redirects) if redirects else []
        mark = len(self.opaque)  # where the line-break finding goes, before the words' own
        plain = True  # every word is plain literal text
        fullmatch = PLAIN_BYTES.fullmatch if _FAST_WORDS else None
        leaf: Node | None
        children = node.children
        count = len(children)
        for index, child in enumerate([*children, *extra] if extra else children):
            kind = child.type
            if kind == "word":  # the common case first: an argument
                leaf, leaf_kind = child, kind
            elif kind == "command_name":
                leaf = child.children[0] if child.child_count == 1 else None
                leaf_kind = leaf.type if leaf is not None else ""
            elif kind == "variable_assignment":
                assignments.append(child)
                continue
            elif kind.endswith("redirect"):
                own.append(child)
                continue
            elif (
                not child.is_named
                and index < count
                and node.field_name_for_child(index) != "argument"
            ):
                continue  # (a bare token as an argument, `echo ]`, is a word)
            else:
                leaf, leaf_kind = child, kind
            words.append(child)
            # what `plain_word(leaf, source)` decides, inlined (most words are plain literal text)
            if (
                fullmatch is not None
                and (leaf_kind == "word" or leaf_kind == "number")
                and leaf is not None
                and not leaf.child_count
            ):
                first, last = leaf.start_byte, leaf.end_byte
                if fullmatch(source, first, last):
                    text = source[first:last].decode("ascii")
                    decoded.append(_new_tuple(Word, (text, text, False, None, False)))
                    continue
            # not plain text: it may hold substitutions
            plain = False
            if fullmatch is not None and leaf is not None:
                literal = literal_word(leaf, leaf_kind, source)
                if literal is not None:  # (no substitution in it: nothing to scan)
                    decoded.append(literal)
                    continue
            self.scan(child, dirs, depth)
            decoded.append(word_from_node(child, source))
        if source.find(b"\n", start, end) >= 0 and newline_between(node, words, source):
            self.opaque.insert(mark, Opaque("the grammar read one command across a line break"))
        if (not plain or own) and split_word(children, source, own):
            self.fail("the grammar split one word in two (bash joins them)")
        assigned: list[Word] = []
        for child in assignments:
            self.scan(child, dirs, depth)
            self._check_assignment(child)
            assigned.append(Word(node_text(child, source), None))
        if own:
            self.redirects(own, dirs, depth)
        if not words:
            self.commands.append(new_command((), tuple(assigned), Unwrapped(starts=[0]), dirs))
            return dirs, dirs
        return self.simple(decoded, assigned, dirs, depth, plain=plain)


#: Whether words of plain literal text are decoded on the spot (the differential tests turn
#: it off to compare with every word decoded in full).
_FAST_WORDS = True
#: A plain literal word, no ``=`` (no assignment): of plain characters, or of plain characters
#: but ``:`` with a ``~`` after the first (``HEAD~1``, which `literal_word` decodes to itself).
#: (Each alternative must end the word, a blank or the end next: the repetition around it is
#: possessive, so the next alternative is only tried within the word.)
_PLAIN_WORD = (
    rb"(?:[A-Za-z0-9_./:,+@%^-]++(?![^ ])|[A-Za-z0-9_./,+@%^-][A-Za-z0-9_./,+@%^~-]*+(?![^ ]))"
)
#: A whole simple command of plain literal words and single spaces. (Possessive quantifiers:
#: a line that is not plain fails without backtracking into the words before.)
_PLAIN_COMMAND = re.compile(_PLAIN_WORD + rb"(?: " + _PLAIN_WORD + rb")*+")
#: The target of a plain ``cd`` that `_cd` takes as it is: no option (``-``, ``+``), no
#: directory-stack entry (a digit string after the first character).
_PLAIN_CD = re.compile(r"[^-+](?![0-9]++\Z).*+", re.DOTALL)
#: A quoted literal: ``'…'`` or ``"…"`` with nothing that expands or escapes, on one line and
#: without ``=`` (a word the grammar could read as an assignment goes the long way).
_QUOTED_WORD = rb"""(?:"[^"$`\\\n=]*+"(?![^ ])|'[^'\n=]*+'(?![^ ]))"""
#: A whole simple command of plain literal words and quoted literals, single spaces between.
_LITERAL_WORD = rb"(?:" + _PLAIN_WORD + rb"|" + _QUOTED_WORD + rb")"
_LITERAL_COMMAND = re.compile(_LITERAL_WORD + rb"(?: " + _LITERAL_WORD + rb")*+")
#: The words of such a command (a quoted one may hold spaces).
_LITERAL_TOKEN = re.compile(r""""[^"]*+"|'[^']*+'|[^ ]++""")
_QUOTED_DELIMITER = re.compile(r"[\\'\"]")
_TEXT_LEAVES = frozenset({"word", "string_content", "heredoc_body", "heredoc_content"})


_new_tuple = tuple.__new__
_NO, _NONE, _WORDS = repeat(False), repeat(None), repeat(Word)
#: Redirections that copy (or close) a descriptor, written as the grammar reads them whole.
_DESCRIPTOR_COPIES = frozenset(
    {b"2>&1", b"1>&2", b">&2", b">&1", b"2>&-", b">&-", b"1>&-", b"0<&-", b"<&-"}
)


_STATEMENTS: dict[str, Callable[[Walker, Node, Dirs, int], Result]] = {
    "if_statement": Walker._if,
    "while_statement": Walker._loop,
    "for_statement": Walker._loop,
    "c_style_for_statement": Walker._loop,
    "case_statement": Walker._case,
    "function_definition": Walker._function,
    "variable_assignment": Walker._assignment,
    "variable_assignments": Walker._assignment,
    "declaration_command": Walker._declaration,
    "unset_command": Walker._declaration,
    "test_command": Walker._test,
}
