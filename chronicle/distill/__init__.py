"""Memory distillation: redaction, prompts, reply validation, offline rules and knowledge-file writes."""
