"""Live signals: read what vLLM pods measure and turn it into one `Signals` value per deployment."""
