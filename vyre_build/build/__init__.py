"""The cached build: action keys of a kernel file, the parse memo, the build step, the
worker pool and the SCons tool (scons_tool, with scons_bundle, scons_build and scons_scan)
that drives them; the bundle rebuild check."""
