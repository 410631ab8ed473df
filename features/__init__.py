"""features layer."""
