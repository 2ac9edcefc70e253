"""Holds `vyre.py`, the SCons tool entry; a package so that it is installed with vyre_build."""
