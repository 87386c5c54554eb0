// Not served at v0.33.13 and imported by nothing the build needs.
module k8s.io/sample-cli-plugin

go 1.24.0
