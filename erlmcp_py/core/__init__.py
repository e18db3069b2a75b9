"""Pure, sans-IO core of erlmcp-py: no trio, no sockets, no clock reads (time is an argument)."""
