"""trio-agents: the Claude Agent SDK's agent loop as a tree of Trio actors.

The public names are those of the Python Claude Agent SDK::

    import trio
    from agents import query, AgentOptions, ResultMessage

    async def main():
        async for message in query(prompt="What files are here?"):
            if isinstance(message, ResultMessage):
                print(message.result)

    trio.run(main)

``import agents`` stays cheap: the ``anthropic`` client is imported only when the Anthropic backend
is used.
"""

from __future__ import annotations

from ._assembly.query import AgentClient as AgentClient
from ._assembly.query import query as query
from .hooks import HookMatcher as HookMatcher
from .messages import AssistantMessage as AssistantMessage
from .messages import ContentBlock as ContentBlock
from .messages import Message as Message
from .messages import ResultError as ResultError
from .messages import ResultMessage as ResultMessage
from .messages import StreamEvent as StreamEvent
from .messages import SystemMessage as SystemMessage
from .messages import TextBlock as TextBlock
from .messages import ThinkingBlock as ThinkingBlock
from .messages import ToolResultBlock as ToolResultBlock
from .messages import ToolUseBlock as ToolUseBlock
from .messages import UserMessage as UserMessage
from .options import AgentDefinition as AgentDefinition
from .options import AgentOptions as AgentOptions
from .permissions import PermissionResultAllow as PermissionResultAllow
from .permissions import PermissionResultDeny as PermissionResultDeny
from .permissions import ToolPermissionContext as ToolPermissionContext
from .sessions import get_session_messages as get_session_messages
from .sessions import list_sessions as list_sessions
from .tools.base import SdkMcpTool as SdkMcpTool
from .tools.base import ToolAnnotations as ToolAnnotations
from .tools.base import create_sdk_mcp_server as create_sdk_mcp_server
from .tools.base import tool as tool

__all__ = [
    "AgentClient",
    "AgentDefinition",
    "AgentOptions",
    "AssistantMessage",
    "ContentBlock",
    "HookMatcher",
    "Message",
    "PermissionResultAllow",
    "PermissionResultDeny",
    "ResultError",
    "ResultMessage",
    "SdkMcpTool",
    "StreamEvent",
    "SystemMessage",
    "TextBlock",
    "ThinkingBlock",
    "ToolAnnotations",
    "ToolPermissionContext",
    "ToolResultBlock",
    "ToolUseBlock",
    "UserMessage",
    "create_sdk_mcp_server",
    "get_session_messages",
    "list_sessions",
    "query",
    "tool",
]
