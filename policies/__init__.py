"""gpudr's Pulumi policy pack: what a DR deployment must hold, checked at preview time."""
