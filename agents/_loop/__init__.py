"""One agent's turn loop: prompt → model → tools → results → repeat → result.

Depends only on the SDK's base modules (messages, options, tools.base, backends.base, sessions,
hooks) and on ``runtime``; the features, the tree and the assembly plug in at its seams
(``contracts``) and never the other way round.
"""
