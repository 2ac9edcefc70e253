"""Content-addressed artifact cache, one module per concern (this package imports none of
them, so no module of it is ever imported in a circle):

    key       action keys: the manifest of a build step's inputs and its blake3
    record    action records: what a key built, the same bytes locally and remotely
    layout    the cache directory's files, read defensively
    store     the local store (blobs by content, records by key), robust to its storage
    writer    the store's write side: the claim of its directory, atomic writes, locks
    gc        LRU and age eviction, orphan and temp-file sweeps, clear
    stats     counters per tier, last build and overall
    history   the keys each output was built from, per project (for `cache why`)
    why       what changed between an output's last two builds
    scan      the scan memo (stems and imports of kernel files across builds)
    remote    the remote tier over HTTP (/cas/<blake3>, /ac/<key>)
    remote_fetch   its reads, every byte checked before it is used
    remote_upload  its uploads, on a background thread
    transport HTTP with kept-alive connections, for the remote tier
"""
