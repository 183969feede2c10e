"""Azure components of a gpudr site."""
