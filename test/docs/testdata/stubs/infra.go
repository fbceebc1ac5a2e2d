// Package snippet is what the manual's CDK fragments may use without
// declaring it.
package snippet

import "github.com/aws/aws-cdk-go/awscdk/v2"

var stack awscdk.Stack // the stack the construct goes in
