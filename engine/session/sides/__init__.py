"""Sides of a conversation: built-in WebSocket side servers and the engine's client links."""

from engine.session.sides.link import SideFailure, SideLink
from engine.session.sides.server import SideServer, builtin_side, server_uri, start_side_server

__all__ = ["SideFailure", "SideLink", "SideServer", "builtin_side", "server_uri", "start_side_server"]
