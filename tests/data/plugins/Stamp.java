package com.example.transforms;

import java.nio.charset.StandardCharsets;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.transforms.Transformation;

/**
 * A transform of a team's own, as `--plugin-path` loads it: it adds the header `stamped` with its
 * required setting `value` to every record and keeps the topic. tests/runtime/test_replication.py
 * compiles it into a plugin folder.
 */
public class Stamp<R extends ConnectRecord<R>> implements Transformation<R> {
    private static final ConfigDef CONFIG = new ConfigDef()
        .define("value", ConfigDef.Type.STRING, ConfigDef.NO_DEFAULT_VALUE, ConfigDef.Importance.HIGH,
                "the header's value");
    private String value;

    @Override
    public R apply(R record) {
        // Bytes: MirrorMaker 2's workers convert headers with ByteArrayConverter, which refuses a
        // STRING header ("Invalid schema type for ByteArrayConverter: STRING").
        record.headers().addBytes("stamped", value.getBytes(StandardCharsets.UTF_8));
        return record;
    }

    @Override
    public ConfigDef config() {
        return CONFIG;
    }

    @Override
    public void configure(Map<String, ?> configs) {
        value = (String) configs.get("value");
    }

    @Override
    public void close() {
    }
}
