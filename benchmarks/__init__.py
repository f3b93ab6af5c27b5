"""Side-by-side benchmarks of constrain against xgrammar, llguidance and outlines-core."""
