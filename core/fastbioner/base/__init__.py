"""The base layer: errors, the job protocol (progress, cancel), typed configuration, the
CPU's description and the product defaults table. It imports nothing else of the library."""
