"""MD-Roofline: the three planes, bottleneck location, time prediction, stragglers, validation."""
