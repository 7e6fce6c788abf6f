"""Agents as actors: serving an agent's mailbox, subagents, agents spawned from code.

The only writer of the loop's tree links (its actor, nursery, background children and their
notifications).
"""
