// Not served at v0.33.13 and imported by nothing the build needs.
module k8s.io/sample-controller

go 1.24.0
