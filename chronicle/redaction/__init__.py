"""Redaction building blocks (pure): validators (`checks`) and shape rules (`shapes`) used by
`chronicle.redaction.redactor.Redactor`, and the `Redacted` text type the sinks accept (`text`)."""
