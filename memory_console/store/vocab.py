"""The closed vocabularies of a memory's fields (docs/ARCHITECTURE.md, "Data model")."""

TOPICS = ("preferences", "user_info", "contacts", "projects", "decisions", "general")
TIERS = ("working", "short_term", "long_term", "episodic")
# The banks with a lifespan: their memories belong to a session (metadata.session_id), end
# with it and expire after a TTL; long_term and episodic are permanent.
SESSION_TIERS = ("working", "short_term")
MEMORY_TYPES = ("semantic", "episodic", "procedural")
SOURCES = (
    "user_directive",
    "background_scan",
    "session_review",
    "import",
    "consolidation",
    "manual",
)
DECAY_POLICIES = ("none", "standard", "aggressive", "pending_deletion")
STATUSES = ("active", "archived", "consolidated")
EVENT_KINDS = (
    "created",
    "accessed",
    "decayed",
    "reinforced",
    "protected",
    "unprotected",
    "archived",
    "restored",
    "flagged",
    "consolidated",
    "promoted",
    "edited",
    "purged",
    "superseded",  # archived: a newer memory states this fact's new value
    "supersedes",  # on that newer memory, naming the one it replaced
)

# Columns a person may sort by; each has an index so keyset paging reads one page only.
SORTABLE = (
    "id",
    "title",
    "owner",
    "topic",
    "tier",
    "memory_type",
    "importance",
    "confidence",
    "retrieval_count",
    "created_at",
    "updated_at",
    "last_accessed_at",
    "status",
    "decay_policy",
    "is_protected",
)

# Fields an operator may edit (through the TUI's edit form or the Store's edit()).
EDITABLE = (
    "title",
    "content",
    "topic",
    "memory_type",
    "tier",
    "owner",
    "keywords",
    "importance",
    "confidence",
    "decay_policy",
    "metadata",
)

CHOICES: dict[str, tuple[str, ...]] = {
    "topic": TOPICS,
    "tier": TIERS,
    "memory_type": MEMORY_TYPES,
    "source": SOURCES,
    "decay_policy": DECAY_POLICIES,
    "status": STATUSES,
}
