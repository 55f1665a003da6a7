package authz

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
)

// Bootstrap creates the bootstrap policy's ClusterRoles and
// ClusterRoleBindings through conn, or reconciles existing ones as
// Kubernetes does: what is missing is added (rules, aggregation selectors,
// subjects, labels and annotations), what a user added is kept, and an
// object annotated rbac.authorization.kubernetes.io/autoupdate: "false" is
// left alone. A binding whose roleRef changed is replaced (roleRef is
// immutable). Several apiservers may run it at once.
func Bootstrap(ctx context.Context, conn grpc.ClientConnInterface, log *zap.Logger) error {
	crs, crbs := client.ClusterRoles(conn), client.ClusterRoleBindings(conn)
	for i := range bootstrapPolicy {
		b := &bootstrapPolicy[i]
		if err := ensure(ctx, crs, b.clusterRole(), mergeClusterRole, log); err != nil {
			return fmt.Errorf("bootstrap ClusterRole %q: %w", b.name, err)
		}
		if want := b.binding(); want != nil {
			if err := ensure(ctx, crbs, want, mergeClusterRoleBinding, log); err != nil {
				return fmt.Errorf("bootstrap ClusterRoleBinding %q: %w", b.name, err)
			}
		}
	}
	return nil
}

// merged is what a merge decided.
type merged int

const (
	unchanged merged = iota
	update           // write the merged object
	replace          // delete the object and create the wanted one
)

// ensure creates want or merges it into the object that exists, retrying
// on conflicts and on a race with another apiserver's create.
func ensure[T object.Object, L proto.Message](ctx context.Context, r *client.Resource[T, L], want T, merge func(cur, want T) (T, merged), log *zap.Logger) error {
	name := want.GetMetadata().GetName()
	retriable := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	return client.OnError(ctx, client.DefaultRetry, retriable, func() error {
		cur, err := r.Get(ctx, "", name)
		if apierrors.IsNotFound(err) {
			_, err = r.Create(ctx, want)
			if err == nil {
				log.Info("created", zap.String("resource", r.Resource()), zap.String("name", name))
			}
			return err
		}
		if err != nil {
			return err
		}
		if cur.GetMetadata().GetAnnotations()[AnnotationAutoupdate] == "false" {
			return nil
		}
		next, what := merge(cur, want)
		switch what {
		case update:
			log.Info("adding what is missing", zap.String("resource", r.Resource()), zap.String("name", name))
			_, err = r.Update(ctx, next)
			return err
		case replace:
			log.Info("replacing (its roleRef changed)", zap.String("resource", r.Resource()), zap.String("name", name))
			_, err = r.Delete(ctx, &metav1.DeleteRequest{Name: name, Preconditions: &metav1.Preconditions{Uid: cur.GetMetadata().GetUid()}})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			_, err = r.Create(ctx, want)
			return err
		}
		return nil
	})
}

// mergeMeta adds want's missing labels and annotations to m (existing
// values are kept).
func mergeMeta(m, want *metav1.ObjectMeta) bool {
	changed := false
	add := func(into *map[string]string, from map[string]string) {
		for k, v := range from {
			if _, ok := (*into)[k]; ok {
				continue
			}
			if *into == nil {
				*into = map[string]string{}
			}
			(*into)[k] = v
			changed = true
		}
	}
	add(&m.Labels, want.GetLabels())
	add(&m.Annotations, want.GetAnnotations())
	return changed
}

// mergeClusterRole adds to cur what want has and cur lacks: rules that no
// rule of cur covers, aggregation selectors, labels and annotations.
func mergeClusterRole(cur, want *rbacv1.ClusterRole) (*rbacv1.ClusterRole, merged) {
	next := proto.Clone(cur).(*rbacv1.ClusterRole)
	changed := mergeMeta(next.Metadata, want.GetMetadata())
	have := compileRules(next.GetRules())
	for _, pr := range want.GetRules() {
		if !covers(have, pr) {
			next.Rules = append(next.Rules, proto.Clone(pr).(*rbacv1.PolicyRule))
			changed = true
		}
	}
	for _, sel := range want.GetAggregationRule().GetClusterRoleSelectors() {
		if next.AggregationRule == nil {
			next.AggregationRule = &rbacv1.AggregationRule{}
		}
		if !slices.ContainsFunc(next.AggregationRule.ClusterRoleSelectors, func(s *metav1.LabelSelector) bool { return proto.Equal(s, sel) }) {
			next.AggregationRule.ClusterRoleSelectors = append(next.AggregationRule.ClusterRoleSelectors, proto.Clone(sel).(*metav1.LabelSelector))
			changed = true
		}
	}
	if !changed {
		return cur, unchanged
	}
	return next, update
}

// mergeClusterRoleBinding adds want's missing subjects, labels and
// annotations; a different roleRef means replacing the binding.
func mergeClusterRoleBinding(cur, want *rbacv1.ClusterRoleBinding) (*rbacv1.ClusterRoleBinding, merged) {
	if !proto.Equal(cur.GetRoleRef(), want.GetRoleRef()) {
		return want, replace
	}
	next := proto.Clone(cur).(*rbacv1.ClusterRoleBinding)
	changed := mergeMeta(next.Metadata, want.GetMetadata())
	for _, s := range want.GetSubjects() {
		if !slices.ContainsFunc(next.Subjects, func(x *rbacv1.Subject) bool {
			return x.GetKind() == s.GetKind() && x.GetName() == s.GetName() && x.GetNamespace() == s.GetNamespace()
		}) {
			next.Subjects = append(next.Subjects, proto.Clone(s).(*rbacv1.Subject))
			changed = true
		}
	}
	if !changed {
		return cur, unchanged
	}
	return next, update
}

// covers says whether the rules have grants everything pr grants: every
// verb, group, resource (and name) of pr, taken literally ("*" is only
// covered by "*"), is allowed by some rule.
func covers(have []*rule, pr *rbacv1.PolicyRule) bool {
	for _, verb := range pr.GetVerbs() {
		for _, path := range pr.GetNonResourceUrls() {
			if !anyAllows(have, &request{verb: verb, path: path}) {
				return false
			}
		}
		for _, group := range pr.GetApiGroups() {
			for _, res := range pr.GetResources() {
				q := request{resource: true, verb: verb, group: group}
				q.res, q.sub = splitResource(res)
				names := pr.GetResourceNames()
				if len(names) == 0 {
					names = []string{""}
				}
				for _, name := range names {
					q.name = name
					if !anyAllows(have, &q) {
						return false
					}
				}
			}
		}
	}
	return true
}

func anyAllows(rules []*rule, q *request) bool {
	return slices.ContainsFunc(rules, func(r *rule) bool { return r.allows(q) })
}

func splitResource(s string) (res, sub string) {
	res, sub, _ = strings.Cut(s, "/")
	return res, sub
}
