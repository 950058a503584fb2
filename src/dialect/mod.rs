//! The dialects of whatever acts on a verdict: each a pure function of the reading (a
//! probe's judgement, a verdict's checks) to the words its reader speaks, one file each,
//! tested as tables, without I/O. A new balancer's conventions are one more file here.
//!
//! - [`kube`]: Kubernetes' plain-text `?verbose`, `?exclude` and per-check answers.

pub(crate) mod kube;
