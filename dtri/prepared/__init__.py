"""The prepared graph: input read, canonicalized, ranked, oriented and sorted once, persisted on
the workers, and reused by every analytic."""
