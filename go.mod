module github.com/sqsonce/sqsonce

go 1.26.0

toolchain go1.26.10

require (
	github.com/aws/aws-lambda-go v1.55.1
	github.com/hashicorp/golang-lru/v2 v2.0.7
)
