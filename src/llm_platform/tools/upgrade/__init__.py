"""`llm-platform upgrade`: what a move to candidate versions of the pinned charts, CRDs and images changes for
a stack's objects, before the pins move (docs/operations.md, "Previewing an upgrade")."""
