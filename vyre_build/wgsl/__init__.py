"""Rule tables and per-op rules of the WGSL emitter; the entry point is `vyre_build.emit_wgsl`."""
