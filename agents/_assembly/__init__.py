"""A session built from options: ``query`` and ``AgentClient``, the setup of the main agent, the
transcripts, the permission gate and CLAUDE.md."""
