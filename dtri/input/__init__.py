"""Inputs: anything a user has (paths, URLs, frames, arrays, generator specs) as a Dask frame of
``src, dst`` vertex ids."""
