"""Plug-ins at the loop's seams: hooks, structured output, slash commands."""
