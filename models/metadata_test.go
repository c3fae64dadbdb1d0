package models

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMergeMetadata(t *testing.T) {
	cart := map[string]string{"a": "1", "b": "2", "c": "3"}
	got, err := MergeMetadata(cart, map[string]string{"b": "two", "c": "", "d": "4"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "1", "b": "two", "d": "4"}, got)
	assert.Equal(t, map[string]string{"a": "1", "b": "2", "c": "3"}, cart, "the cart's map is left unchanged")

	got, err = MergeMetadata(nil, map[string]string{"x": ""})
	require.NoError(t, err)
	assert.Nil(t, got, "nothing left is nil")

	twenty := map[string]string{}
	for i := range MaxMetadataKeys {
		twenty[fmt.Sprintf("k%d", i)] = "v"
	}
	_, err = MergeMetadata(twenty, map[string]string{"one_more": "v"})
	var me *Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, CodeInvalidRequest, me.Code)
	assert.Equal(t, "metadata", me.Field)
	got, err = MergeMetadata(twenty, map[string]string{"one_more": "v", "k0": ""})
	require.NoError(t, err)
	assert.Len(t, got, MaxMetadataKeys)
}

func TestValidateMetadata(t *testing.T) {
	assert.NoError(t, ValidateMetadata(nil))
	assert.NoError(t, ValidateMetadata(map[string]string{strings.Repeat("é", MaxMetadataKeyLen): strings.Repeat("ü", MaxMetadataValueLen), "empty": ""}))
	for name, tc := range map[string]struct {
		m     map[string]string
		field string
	}{
		"too many keys": {func() map[string]string {
			m := map[string]string{}
			for i := range MaxMetadataKeys + 1 {
				m[fmt.Sprintf("k%d", i)] = ""
			}
			return m
		}(), "metadata"},
		"key too long":   {map[string]string{strings.Repeat("k", MaxMetadataKeyLen+1): "v"}, "metadata." + strings.Repeat("k", MaxMetadataKeyLen+1)},
		"empty key":      {map[string]string{"": "v"}, "metadata"},
		"newline in key": {map[string]string{"a\nb": "v"}, "metadata.a\nb"},
		"value too long": {map[string]string{"v": strings.Repeat("x", MaxMetadataValueLen+1)}, "metadata.v"},
		"first in order": {map[string]string{"b": strings.Repeat("x", 501), "a": strings.Repeat("x", 501)}, "metadata.a"},
	} {
		t.Run(name, func(t *testing.T) {
			err := ValidateMetadata(tc.m)
			var me *Error
			require.ErrorAs(t, err, &me)
			assert.Equal(t, CodeInvalidRequest, me.Code)
			assert.Equal(t, tc.field, me.Field)
		})
	}
}
