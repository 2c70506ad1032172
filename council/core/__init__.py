"""The shared bottom: errors, the record schema, vendor resolution and logging."""
