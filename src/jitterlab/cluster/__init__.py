"""The Dask executor (``--cluster local:N|ADDRESS``): the second :class:`jitterlab.store.reader.Engine`
beside the local one, its passes run as one task per row group on a cluster's workers, each
reading its row group through the one reader (docs/cluster.md). It imports store/, stats/
and core/; nothing below it imports it, and the CLI hands its engine to the rooms that take
an ``Engine``."""
