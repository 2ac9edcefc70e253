"""SCons finds the tool `vyre` here (toolpath=[vyre_build.build.scons_tool.toolpath()])."""

from vyre_build.build.scons_tool import exists, generate

__all__ = ["exists", "generate"]
