"""Redaction building blocks (pure): validators (`checks`) and shape rules (`shapes`) used by
`chronicle.distill.redact.Redactor`, and the `Redacted` text type the sinks accept (`text`)."""
