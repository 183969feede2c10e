"""GCP components of a gpudr site."""
