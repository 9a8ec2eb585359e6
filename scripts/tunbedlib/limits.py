"""The runner's limits in one place: each number with where it comes from.

Every input that crosses a trust boundary (an inventory, a scenario file, a result directory, a
driver's output) is bounded by a name here, and refused in one line when it is exceeded.
"""

# Inventories and hosts (ansible-inventory, ssh).

# Scenario files, matrices, records and drivers' output.
