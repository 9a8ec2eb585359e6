"""tunbed's runner: scenarios, gateway drivers, measurement, analysis, reports and plots.

The runner talks to the C tools (tunbed-topo, gregw, tunbed-traffic) through their command
lines and JSON only, and reads CPU accounting from /proc itself.
"""
