module skiff.dev/deploy/compose/probe

go 1.26.0
