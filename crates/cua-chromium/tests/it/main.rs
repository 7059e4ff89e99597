//! Integration tests against real Chromium. They never skip: without Chromium they fail with
//! the install step (`apt-get install -y chromium`).

mod failures;
mod fixture;
mod hostile;
mod pages;
mod support;
