"""Small helpers every layer may use; they import nothing from the rest of om-eval."""
