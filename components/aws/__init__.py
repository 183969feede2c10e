"""AWS components of a gpudr site."""
