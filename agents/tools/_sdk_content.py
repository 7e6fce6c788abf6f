"""An in-process tool's result content as Messages API blocks.

The Agent SDK's tools return MCP's content shapes; the wrapper of :func:`agents.tool` converts
them here, as an external MCP server's result is converted (:mod:`agents.mcp._rpc`), or names
what is wrong with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SDK_CONTENT_TYPES", "sdk_blocks"]


#: the content item types an in-process tool may return (MCP's, as the Agent SDK's tools return
#: them, and the Messages API's own blocks)
SDK_CONTENT_TYPES = (
    "text", "image", "resource", "resource_link", "audio", "document", "search_result"
)  # fmt: skip


def sdk_blocks(content: Any) -> list[dict[str, Any]] | str:
    """An in-process tool's ``content`` as Messages API blocks, or what is wrong with it.

    The Agent SDK's tools return MCP's shapes — ``{"type": "image", "data": …, "mimeType": …}``,
    embedded resources, links — which the API does not take, and anything else a handler
    returns would reach the model's request unchecked (the API refuses the whole request) or
    break the loop: so each item is converted or named in a clear error, as an external MCP
    server's result is. A text item is rebuilt with its two fields only (MCP's ``annotations``
    and ``_meta`` are not the API's); the API's own ``image``, ``document`` and
    ``search_result`` blocks pass as they are.
    """
    if type(content) is list:
        for item in content:  # the common case: plain text items, taken as they are
            if (
                type(item) is not dict
                or item.get("type") != "text"
                or type(item.get("text")) is not str
                or len(item) != 2
            ):
                break
        else:
            return content.copy()
    elif not isinstance(content, (list, tuple)):
        return f"content of type {type(content).__name__}; expected a list of content items"
    return _converted(content)


def _converted(content: list[Any] | tuple[Any, ...]) -> list[dict[str, Any]] | str:
    """``sdk_blocks`` item by item."""
    blocks: list[dict[str, Any]] = []
    for i, item in enumerate(content):
        if not isinstance(item, Mapping):
            return f"content[{i}] of type {type(item).__name__}; expected a dict with 'type'"
        kind = item.get("type")
        if kind == "text":
            text = item.get("text")
            if not isinstance(text, str):
                return f"content[{i}].text of type {type(text).__name__}; expected a str"
            blocks.append({"type": "text", "text": text})
        elif kind == "image":
            source = item.get("source")
            data, mime = item.get("data"), item.get("mimeType")
            if isinstance(source, Mapping) and isinstance(source.get("type"), str):
                blocks.append({"type": "image", "source": dict(source)})
            elif isinstance(data, str) and isinstance(mime, str):
                source = {"type": "base64", "media_type": mime, "data": data}
                blocks.append({"type": "image", "source": source})
            else:
                return (
                    f"content[{i}]: an image needs 'data' and 'mimeType' strings (MCP) or a "
                    "'source' dict (Messages API)"
                )
        elif kind == "resource":
            resource = item.get("resource")
            if not isinstance(resource, Mapping):
                return f"content[{i}]: a resource needs a 'resource' dict"
            if isinstance(resource.get("text"), str):
                blocks.append({"type": "text", "text": resource["text"]})
            elif resource.get("blob") is not None:
                uri, mime = resource.get("uri"), resource.get("mimeType")
                blocks.append({"type": "text", "text": f"[binary resource {uri} ({mime})]"})
        elif kind == "resource_link":
            link = f"[resource link: {item.get('uri')} ({item.get('name')})]"
            blocks.append({"type": "text", "text": link})
        elif kind == "audio":
            note = f"[audio content ({item.get('mimeType')}) omitted]"
            blocks.append({"type": "text", "text": note})
        elif kind in ("document", "search_result"):
            field, shape = ("source", Mapping) if kind == "document" else ("content", list)
            if not isinstance(item.get(field), shape):
                what = "dict" if shape is Mapping else "list"
                return f"content[{i}]: a {kind} needs a {field!r} {what}"
            blocks.append(dict(item))
        else:
            return (
                f"content[{i}] of type {kind!r}; expected one of {', '.join(SDK_CONTENT_TYPES)}"
            )
    return blocks
