//! (being written: the metrics integration test)
