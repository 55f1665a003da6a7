module skiff.dev/deploy/compose/e2e

go 1.26.0
