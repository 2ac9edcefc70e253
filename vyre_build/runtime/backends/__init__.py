"""Runtime backends, one module or package each (wgpu, cpu, vulkan), found by name through
the registry in vyre_build.runtime (BACKENDS); nothing else imports them directly."""
