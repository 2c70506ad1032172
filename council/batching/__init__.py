"""The batch transport: judge votes through the providers' batch APIs, durable in the run folder and resumed from it."""
