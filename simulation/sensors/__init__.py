"""Sensor models that turn what the renderer sees into a sensor's readings: pure computation, no I/O (event_camera:
ESIM's event camera)."""
