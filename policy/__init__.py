"""The gpu-platform CrossGuard policy pack. Policies live in importable modules and read only
resource inputs as the engine hands them over; `__main__.py` alone builds the PolicyPack (which
starts the analyzer server), so tests and the offline preview import `policy.pack`."""
