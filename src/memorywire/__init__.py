"""memorywire: a vendor-neutral wire format for AI-agent memory."""
